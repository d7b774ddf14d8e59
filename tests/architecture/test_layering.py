"""Rule `layering`: planted imports against the contracts, each caught, and contracts that cover
every deployed package."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
CLEANUP_HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"


CLEANUP_LOGIC = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/logic.py"


WINDOW_LOGIC = f"functions/{DAILY_JOB.package}/{DAILY_JOB.package}/logic.py"


KIT_TICK = "layers/clockless/clockless/tick.py"
KIT_LEDGER = "layers/clockless/clockless/ledger.py"
TEMPLATE_ERRORS = "tools/clockless_tools/template/errors.py"
TEMPLATE_LOADER = "tools/clockless_tools/template/loader.py"
FANOUT_KEYS = "layers/clockless/clockless/fanout/keys.py"
FANOUT_STORE = "layers/clockless/clockless/fanout/store.py"


TOOLS_TEMPLATE = "tools/clockless_tools/template/model.py"


PYPROJECT = "pyproject.toml"


# ---------------------------------------------------------------------------------------------- circles
@pytest.mark.parametrize(
    ("relative", "code", "first", "second"),
    [
        (
            TEMPLATE_ERRORS,
            "\n\ndef _template() -> object:\n    from clockless_tools.template.loader import load_yaml\n\n"
            "    return load_yaml\n",
            (TEMPLATE_ERRORS, "clockless_tools.template.errors"),
            (TEMPLATE_LOADER, "clockless_tools.template.loader"),
        ),
        (
            KIT_TICK,
            "\nfrom . import ledger  # noqa: E402\n",
            (KIT_TICK, "clockless.tick"),
            (KIT_LEDGER, "clockless.ledger"),
        ),
        (
            KIT_TICK,
            "\nfrom typing import TYPE_CHECKING  # noqa: E402\n\nif TYPE_CHECKING:\n"
            "    from clockless.ledger import RunLedger\n",
            (KIT_TICK, "clockless.tick"),
            (KIT_LEDGER, "clockless.ledger"),
        ),
        (
            FANOUT_KEYS,
            "\n\ndef _records() -> object:\n    from clockless.fanout.store import PartitionStore\n\n"
            "    return PartitionStore\n",
            (FANOUT_KEYS, "clockless.fanout.keys"),
            (FANOUT_STORE, "clockless.fanout.store"),
        ),
    ],
    ids=["lazy-import", "relative-import", "type-checking-import", "inside-the-fan-out-kit"],
)
def test_a_circle_closed_by_any_kind_of_import_is_caught(
    planted: PlantedCopy, relative: str, code: str, first: tuple[str, str], second: tuple[str, str]
) -> None:
    # Given a copy where a module imports (lazily, relatively, or for the type checker only) a
    # module that imports it
    planted.append(relative, code)

    # When the no-circles contract reads the import graph
    violations = [v for v in planted.violations("layering") if "import circle" in v.message]

    # Then one of the circle's two imports is named, at its line, as the one to move
    (violation,) = violations
    (file, importer), (_, imported) = (first, second) if violation.file == first[0] else (second, first)
    assert violation.file == file
    assert violation.message.startswith("import circle among ")
    assert f"{importer} imports {imported} (line {violation.line})" in violation.message
    lines = (planted.root / file).read_text(encoding="utf-8").splitlines()
    assert violation.line is not None
    assert "import" in lines[violation.line - 1]
    assert "a module both import" in violation.fix


# ---------------------------------------------------------------------------------------------- layering
def test_logic_importing_boto3_is_caught(planted: PlantedCopy) -> None:
    planted.append(CLEANUP_LOGIC, "\nimport boto3  # noqa: E402\n")

    violations = planted.violations("layering")

    violation = found(violations, file=CLEANUP_LOGIC, resource=f"{HOURLY_JOB.stem}Function", containing="boto3")
    assert "no boto3" in violation.message
    assert violation.line == len((planted.root / CLEANUP_LOGIC).read_text().splitlines())


def test_logic_reaching_pynamodb_through_another_module_is_caught(planted: PlantedCopy) -> None:
    planted.write(
        f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/helpers.py", "from pynamodb.models import Model\n"
    )
    planted.append(CLEANUP_LOGIC, f"\nfrom {HOURLY_JOB.package} import helpers  # noqa: E402\n")

    violations = planted.violations("layering")

    found(
        violations,
        file=CLEANUP_LOGIC,
        resource=f"{HOURLY_JOB.stem}Function",
        containing=f"{HOURLY_JOB.package}.logic -> {HOURLY_JOB.package}.helpers",
    )


@pytest.mark.parametrize(
    ("module", "code", "resource", "complaint"),
    [
        (
            CLEANUP_LOGIC,
            "from clockless.config import env_str",
            f"{HOURLY_JOB.stem}Function",
            "Job logic reads no configuration",
        ),
        (
            WINDOW_LOGIC,
            f"from {DAILY_JOB.package} import repository",
            f"{DAILY_JOB.stem}Function",
            f"{DAILY_JOB.package}.logic -> {DAILY_JOB.package}.repository",
        ),
        (KIT_TICK, f"import {DAILY_JOB.package}.logic", "ClocklessLayer", "The kit (layers/) imports no job"),
        (
            CLEANUP_HANDLER,
            f"from {DAILY_JOB.package}.logic import business_date_of",
            f"{HOURLY_JOB.stem}Function",
            "No job imports another",
        ),
        (
            TOOLS_TEMPLATE,
            "from clockless_tools.cli import common",
            "clockless_tools.template.model",
            "clockless_tools.template.model -> clockless_tools.cli.common",
        ),
    ],
    ids=[
        "logic-reads-kit-config",
        "logic-imports-repository",
        "layer-imports-function",
        "job-imports-job",
        "tools-template-imports-cli",
    ],
)
def test_an_import_against_the_layering_is_caught(
    planted: PlantedCopy, module: str, code: str, resource: str, complaint: str
) -> None:
    # Given one import code against the direction the contracts allow
    planted.append(module, f"\n{code}  # noqa: E402\n")

    # When layering checks the copy
    violations = planted.violations("layering")

    # Then it names the importing module, the resource that ships it and the contract it breaks
    violation = found(violations, file=module, resource=resource, containing=complaint)
    assert violation.line == len((planted.root / module).read_text().splitlines())


def test_a_contract_without_the_functions_is_caught(planted: PlantedCopy) -> None:
    # Given job-layers listing one package in place of "{functions}" (every function's package)
    planted.replace(PYPROJECT, '"{functions}"', '"job_trigger"', after='id = "job-layers"')

    violations = planted.violations("layering")

    # Then every scheduled job's function is named as unchecked, with the placeholder to restore
    scheduled = planted.project.template.scheduled_functions
    assert scheduled
    for function_id in scheduled:
        violation = found(violations, file=PYPROJECT, resource=function_id, containing="job-layers's containers")
        assert "{functions}" in violation.fix


def test_a_new_function_package_is_covered_without_an_edit(planted: PlantedCopy) -> None:
    # Given a function package no contract names, deployed by the template, that imports another job
    (_, function), *_ = planted.project.template.scheduled_functions.items()
    planted.write("functions/probe/probe/__init__.py", "")
    planted.write("functions/probe/probe/logic.py", f"import {function.package_dir}.logic\n")
    planted.write("functions/probe/probe/handler.py", "from probe import logic\n\nlambda_handler = logic\n")
    planted.replace(
        "template.yaml",
        "Resources:\n",
        "Resources:\n  ProbeFunction:\n    Type: AWS::Serverless::Function\n"
        "    Properties:\n      CodeUri: functions/probe/\n      Handler: probe.handler.lambda_handler\n",
    )

    violations = planted.violations("layering")

    # Then jobs-independent reaches it through "{functions}"
    found(violations, file="functions/probe/probe/logic.py", resource="ProbeFunction", containing="probe.logic")


def test_a_project_without_import_contracts_is_caught(planted: PlantedCopy) -> None:
    planted.write(PYPROJECT, '[project]\nname = "clockless"\n')

    violations = planted.violations("layering")

    found(violations, file=PYPROJECT, resource="[tool.importlinter]", containing="no import-linter contracts")
