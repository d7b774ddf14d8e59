"""Rule `import-graph`: planted uses of another module's private names (the fan-out kit's too), each
caught where planted (planted circles: tests/architecture/test_layering.py, contract no-circles)."""

from __future__ import annotations

import pytest

from clockless_tools.architecture import Project
from clockless_tools.architecture.import_graph import package_modules
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy, found

KIT_JOB = "layers/clockless/clockless/job.py"
FANOUT_REPLAY = "layers/clockless/clockless/fanout/replay.py"
FANOUT_PARTITION = "layers/clockless/clockless/fanout/partition.py"
FANOUT_KEYS = "layers/clockless/clockless/fanout/keys.py"


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
