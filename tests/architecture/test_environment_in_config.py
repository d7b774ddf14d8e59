"""Rule `environment-in-config`: an environment read planted in the kit outside its config module,
or in a function's handler, is caught at its line; the config module itself may read it."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import HOUR, job_where

HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
HANDLER = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/handler.py"
KIT_LEDGER = "layers/clockless/clockless/ledger.py"
KIT_CONFIG = "layers/clockless/clockless/config.py"


@pytest.mark.parametrize(
    ("relative", "code", "resource", "module"),
    [
        (
            KIT_LEDGER,
            "\nimport os  # noqa: E402\n\nRETENTION = os.environ.get('LEDGER_RETENTION_DAYS', '30')\n",
            "ClocklessLayer",
            "clockless.ledger",
        ),
        (
            HANDLER,
            "\nfrom os import getenv  # noqa: E402\n\nNAMESPACE = getenv('POWERTOOLS_METRICS_NAMESPACE')\n",
            f"{HOURLY_JOB.stem}Function",
            f"{HOURLY_JOB.package}.handler",
        ),
    ],
    ids=["kit-module", "function-handler"],
)
def test_reading_the_environment_outside_the_config_module_is_caught(
    planted: PlantedCopy, relative: str, code: str, resource: str, module: str
) -> None:
    # Given deployed code that reads a variable itself
    planted.append(relative, code)

    # When the rule reads the code
    violations = planted.violations("environment-in-config")

    # Then the read is named at its line, with where to read it instead
    violation = found(violations, file=relative, resource=resource, containing=f"{module} reads the environment")
    assert "clockless.config" in violation.fix
    last_line = len((planted.root / relative).read_text(encoding="utf-8").splitlines())
    assert last_line in {v.line for v in violations if v.file == relative}


def test_the_config_module_reads_the_environment_and_nothing_else_does(planted: PlantedCopy) -> None:
    # Given the kit's config module reading one more variable
    planted.append(KIT_CONFIG, "\n\ndef region() -> str | None:\n    return os.environ.get('AWS_REGION')\n")

    # Then that is where reads belong: nothing is reported
    assert planted.violations("environment-in-config") == []
