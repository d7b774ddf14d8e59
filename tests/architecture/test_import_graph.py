"""Rule `import-graph`: planted circles (lazy, relative, TYPE_CHECKING, inside the fan-out kit) and
planted uses of another module's private names (the fan-out kit's too), each caught where planted.
One plant goes into the tools (a copy of them costs half a second); the rest into the kit."""

from __future__ import annotations

import pytest

from clockless_tools.architecture import Project
from clockless_tools.architecture.import_graph import package_modules
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy, found

TEMPLATE_ERRORS = "tools/clockless_tools/template/errors.py"
TEMPLATE_LOADER = "tools/clockless_tools/template/loader.py"
KIT_TICK = "layers/clockless/clockless/tick.py"
KIT_LEDGER = "layers/clockless/clockless/ledger.py"
KIT_THROTTLE = "layers/clockless/clockless/throttle.py"
KIT_JOB = "layers/clockless/clockless/job.py"
FANOUT_REPLAY = "layers/clockless/clockless/fanout/replay.py"
FANOUT_PARTITION = "layers/clockless/clockless/fanout/partition.py"
FANOUT_KEYS = "layers/clockless/clockless/fanout/keys.py"
FANOUT_STORE = "layers/clockless/clockless/fanout/store.py"


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
        (
            FANOUT_KEYS,
            "\n\ndef _records() -> object:\n    from clockless.fanout.store import PartitionStore\n\n"
            "    return PartitionStore\n",
            (FANOUT_KEYS, "clockless.fanout.keys", "import PartitionStore"),
            (FANOUT_STORE, "clockless.fanout.store", "from clockless.fanout.keys import"),
        ),
    ],
    ids=["lazy-import", "relative-import", "type-checking-import", "inside-the-fan-out-kit"],
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
        (
            FANOUT_PARTITION,
            "\nfrom clockless.fanout.store import _refused  # noqa: E402\n",
            "clockless.fanout.partition",
            "clockless.fanout.partition uses clockless.fanout.store's private name _refused",
        ),
    ],
    ids=[
        "from-import",
        "through-the-module",
        "method-of-its-object",
        "out-of-the-fan-out-kit",
        "inside-the-fan-out-kit",
    ],
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


# ---------------------------------------------------------------------------------------------- module list
def test_the_fan_out_kit_lists_each_module_once_before_the_modules_it_imports() -> None:
    # Given the project's fan-out kit
    package = "clockless.fanout"
    files = sorted(PROJECT_ROOT.joinpath("layers/clockless/clockless/fanout").glob("*.py"))

    # When its modules are listed for the docs
    listed = package_modules(Project.at(PROJECT_ROOT), package)

    # Then each file but the package's own is listed once, with a summary, before every module it imports
    names = [module.module for module in listed]
    assert sorted(names) == sorted(f"{package}.{path.stem}" for path in files if path.stem != "__init__")
    for place, module in enumerate(listed):
        assert module.summary.endswith("."), module
        assert set(module.imports) <= set(names[place + 1 :]), module
    # and the walk of a partition message starts at the dispatcher, which imports the partition run
    assert names.index(f"{package}.dispatcher") < names.index(f"{package}.partition")
    assert f"{package}.partition" in listed[names.index(f"{package}.dispatcher")].imports


def test_a_module_list_through_a_circle_still_lists_every_module_once(planted: PlantedCopy) -> None:
    # Given a copy where the fan-out kit's keys import its store, which imports its keys
    planted.append(
        FANOUT_KEYS, "\n\ndef _records() -> object:\n    from clockless.fanout import store\n\n    return store\n"
    )

    # When its modules are listed (the rule reports the circle; the list must still end)
    listed = package_modules(planted.project, "clockless.fanout")

    # Then every module is there once, and the circle shows as the imports of both
    by_name = {module.module: module for module in listed}
    assert len(by_name) == len(listed)
    assert "clockless.fanout.store" in by_name["clockless.fanout.keys"].imports
    assert "clockless.fanout.keys" in by_name["clockless.fanout.store"].imports


def test_a_package_without_modules_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"no modules under 'clockless\.nothing'"):
        package_modules(Project.at(PROJECT_ROOT), "clockless.nothing")
