"""Rule `import-graph`: planted circles (lazy, relative, TYPE_CHECKING, reaching into the fan-out
kit from outside) and planted uses of another module's private names, each caught where planted.
One plant goes into the tools (a copy of them costs half a second); the rest into the kit."""

from __future__ import annotations

import re

import pytest

from clockless_tools.architecture.import_graph import KNOWN_UNTIL_SPLIT
from tests.architecture.planting import PlantedCopy, found

TEMPLATE_ERRORS = "tools/clockless_tools/template/errors.py"
TEMPLATE_LOADER = "tools/clockless_tools/template/loader.py"
KIT_TICK = "layers/clockless/clockless/tick.py"
KIT_LEDGER = "layers/clockless/clockless/ledger.py"
KIT_THROTTLE = "layers/clockless/clockless/throttle.py"
KIT_JOB = "layers/clockless/clockless/job.py"
FANOUT_REPLAY = "layers/clockless/clockless/fanout/replay.py"


def _line_of(planted: PlantedCopy, relative: str, text: str) -> int:
    """The (last) line of the file that contains `text`."""
    lines = (planted.root / relative).read_text(encoding="utf-8").splitlines()
    return max(number for number, line in enumerate(lines, 1) if text in line)


# ---------------------------------------------------------------------------------------------- circles
@pytest.mark.parametrize(
    ("relative", "code", "importer", "imported"),
    [
        (
            TEMPLATE_ERRORS,
            "\n\ndef _template() -> object:\n    from clockless_tools.template.loader import load_yaml\n\n"
            "    return load_yaml\n",
            (TEMPLATE_ERRORS, "clockless_tools.template.errors", "import load_yaml"),
            (TEMPLATE_LOADER, "clockless_tools.template.loader", "from clockless_tools.template.errors import"),
        ),
        (
            KIT_TICK,
            "\nfrom . import ledger  # noqa: E402\n",
            (KIT_LEDGER, "clockless.ledger", "from clockless.tick import"),
            (KIT_TICK, "clockless.tick", "from . import ledger"),
        ),
        (
            KIT_TICK,
            "\nfrom typing import TYPE_CHECKING  # noqa: E402\n\nif TYPE_CHECKING:\n"
            "    from clockless.ledger import RunLedger\n",
            (KIT_LEDGER, "clockless.ledger", "from clockless.tick import"),
            (KIT_TICK, "clockless.tick", "from clockless.ledger import RunLedger"),
        ),
    ],
    ids=["lazy-import", "relative-import", "type-checking-import"],
)
def test_a_circle_closed_by_any_kind_of_import_is_caught(
    planted: PlantedCopy, relative: str, code: str, importer: tuple[str, str, str], imported: tuple[str, str, str]
) -> None:
    # Given a copy where a module imports (lazily, relatively, or for the type checker only) a
    # module that imports it
    planted.append(relative, code)
    (first_file, first, first_import), (second_file, second, second_import) = importer, imported

    # When the rule reads the import graph
    violations = planted.violations("import-graph")

    # Then the circle is named module by module, with the line of each import, at its first module
    violation = found(violations, file=first_file, resource=first, containing="import circle")
    first_line = _line_of(planted, first_file, first_import)
    second_line = _line_of(planted, second_file, second_import)
    circle = f"import circle: {first} -> {second} (line {first_line}) -> {first} (line {second_line})"
    assert violation.message.startswith(circle)
    assert violation.line == first_line
    assert "a module both import" in violation.fix


def test_a_circle_into_the_fan_out_kit_from_outside_is_caught(planted: PlantedCopy) -> None:
    # Given the fan-out kit, whose own circles are known until it is split (and only inside it),
    # and a kit module outside it that imports the fan-out worker, which imports it
    assert KNOWN_UNTIL_SPLIT == ("clockless.fanout",)
    planted.append(
        KIT_THROTTLE, "\n\ndef _worker() -> object:\n    from clockless.fanout import worker\n\n    return worker\n"
    )

    # When the rule reads the import graph
    violations = planted.violations("import-graph")

    # Then the circle is reported, through the module outside the fan-out kit
    (circle,) = violations
    assert re.search(r"clockless\.throttle \(line \d+\) -> clockless\.fanout\.worker \(line \d+\)", circle.message)


# ---------------------------------------------------------------------------------------------- private names
@pytest.mark.parametrize(
    ("relative", "code", "resource", "complaint"),
    [
        (
            KIT_JOB,
            "\nfrom clockless.tick import _parse_instant  # noqa: E402\n",
            "clockless.job",
            "clockless.job uses clockless.tick's private name _parse_instant",
        ),
        (
            KIT_JOB,
            "\nfrom clockless import tick as moments  # noqa: E402\n\nDIGITS = moments._DIGITS\n",
            "clockless.job",
            "clockless.job uses clockless.tick's private name _DIGITS",
        ),
        (
            KIT_JOB,
            "\n\ndef _expiry(ledger: object) -> object:\n    return ledger._expires_at()\n",
            "clockless.job",
            "clockless.job uses clockless.ledger's private name _expires_at",
        ),
        (
            FANOUT_REPLAY,
            "\n\ndef _expiry(ledger: object) -> object:\n    return ledger._expires_at()\n",
            "clockless.fanout.replay",
            "clockless.fanout.replay uses clockless.ledger's private name _expires_at",
        ),
    ],
    ids=["from-import", "through-the-module", "method-of-its-object", "out-of-the-fan-out-kit"],
)
def test_using_another_modules_private_name_is_caught(
    planted: PlantedCopy, relative: str, code: str, resource: str, complaint: str
) -> None:
    # Given a copy where a module imports, reaches or calls another module's private name
    planted.append(relative, code)

    # When the rule reads the code
    violations = planted.violations("import-graph")

    # Then the use is reported at its line, naming both modules and the name
    violation = found(violations, file=relative, resource=resource, containing=complaint)
    assert violation.message == complaint
    assert violation.line == len((planted.root / relative).read_text(encoding="utf-8").splitlines())
    assert "make the name public" in violation.fix
