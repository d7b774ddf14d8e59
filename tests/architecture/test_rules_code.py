"""Planted violations of no-clock-in-app and layering, each caught; text that only mentions them is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.planting import PlantedCopy, found

CLEANUP_HANDLER = "functions/session_cleanup/session_cleanup/handler.py"
CLEANUP_LOGIC = "functions/session_cleanup/session_cleanup/logic.py"
WINDOW_LOGIC = "functions/window_generation/window_generation/logic.py"
KIT_TICK = "layers/clockless/clockless/tick.py"
TOOLS_TEMPLATE = "tools/clockless_tools/template/model.py"
PYPROJECT = "pyproject.toml"


# ---------------------------------------------------------------------------------------------- no-clock-in-app
@pytest.mark.parametrize(
    ("planted", "complaint"),
    [
        ("import sched\n", "imports sched"),
        ("from apscheduler.schedulers.background import BackgroundScheduler\n", "APScheduler"),
        ("import schedule as every_so_often\n", "the schedule library"),
        ("from aws_croniter import AwsCroniter\n", "cron iteration at run time"),
        ("import croniter\n", "cron iteration at run time"),
        ("import threading\n\n\ndef later() -> None:\n    threading.Timer(60, later).start()\n", "threading.Timer"),
        ("from threading import Timer as Later\n\nLater(60, print)\n", "threading.Timer"),
        (
            "import time\n\n\ndef forever() -> None:\n    while True:\n        time.sleep(60)\n",
            "time.sleep inside a loop",
        ),
        (
            "from time import sleep\n\n\ndef forever() -> None:\n    while 1:\n        sleep(5)\n",
            "time.sleep inside a loop",
        ),
        (
            "import asyncio\n\n\nasync def forever() -> None:\n    while True:\n        await asyncio.sleep(60)\n",
            "asyncio.sleep inside a loop",
        ),
        (
            "import itertools\nimport time\n\n\ndef forever() -> None:\n"
            "    for _ in itertools.count():\n        time.sleep(1)\n",
            "time.sleep inside a loop",
        ),
        (
            "import asyncio\n\n\ndef later() -> None:\n    asyncio.get_event_loop().call_later(60, later)\n",
            ".call_later()",
        ),
    ],
    ids=[
        "sched",
        "apscheduler",
        "schedule",
        "aws-croniter",
        "croniter",
        "threading-timer",
        "timer-alias",
        "while-sleep",
        "from-time-sleep",
        "asyncio-loop",
        "itertools-count",
        "call-later",
    ],
)
def test_a_clock_in_a_function_is_caught(tmp_path: Path, planted: str, complaint: str) -> None:
    # Given a module in a function's package that schedules inside the process
    copy = PlantedCopy.of_project(tmp_path)
    module = "functions/session_cleanup/session_cleanup/timer.py"
    copy.write(module, planted)

    # When no-clock-in-app checks the copy
    violations = copy.violations("no-clock-in-app")

    # Then it names the module, the function that ships it and the line
    violation = found(violations, file=module, resource="SessionCleanupFunction", containing=complaint)
    assert violation.line is not None


def test_a_clock_in_the_layer_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.append(KIT_TICK, "\n\ndef _heartbeat() -> None:\n    import time\n\n    while True:\n        time.sleep(30)\n")

    violations = copy.violations("no-clock-in-app")

    found(violations, file=KIT_TICK, resource="ClocklessLayer", containing="time.sleep inside a loop")


def test_code_under_functions_outside_any_codeuri_is_checked_too(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.write("functions/stray/stray.py", "import sched\n")

    violations = copy.violations("no-clock-in-app")

    found(violations, file="functions/stray/stray.py", resource="functions/stray", containing="imports sched")


def test_comments_strings_and_bounded_sleeps_are_not_clocks(tmp_path: Path) -> None:
    # Given text that mentions clocks, and a sleep outside any loop
    copy = PlantedCopy.of_project(tmp_path)
    copy.write(
        "functions/session_cleanup/session_cleanup/notes.py",
        '"""Never `import sched` or `while True: time.sleep(60)` here."""\n\n'
        "import time\n\n"
        "# threading.Timer(60, run).start()\n"
        'WHY = "apscheduler runs in every replica"\n\n\n'
        "def pause() -> None:\n    time.sleep(0.1)\n\n\n"
        "def retry_three_times() -> None:\n    for _ in range(3):\n        time.sleep(0.1)\n",
    )

    assert copy.violations("no-clock-in-app") == []


# ---------------------------------------------------------------------------------------------- layering
def test_logic_importing_boto3_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.append(CLEANUP_LOGIC, "\nimport boto3  # noqa: E402\n")

    violations = copy.violations("layering")

    violation = found(violations, file=CLEANUP_LOGIC, resource="SessionCleanupFunction", containing="boto3")
    assert "no boto3" in violation.message
    assert violation.line == len((copy.root / CLEANUP_LOGIC).read_text().splitlines())


def test_logic_reaching_pynamodb_through_another_module_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.write("functions/session_cleanup/session_cleanup/helpers.py", "from pynamodb.models import Model\n")
    copy.append(CLEANUP_LOGIC, "\nfrom session_cleanup import helpers  # noqa: E402\n")

    violations = copy.violations("layering")

    found(
        violations,
        file=CLEANUP_LOGIC,
        resource="SessionCleanupFunction",
        containing="session_cleanup.logic -> session_cleanup.helpers",
    )


@pytest.mark.parametrize(
    "planted",
    [
        "\nimport os  # noqa: E402\n\nTABLE = os.environ['SESSIONS_TABLE_NAME']\n",
        "\nimport os  # noqa: E402\n\nTABLE = os.getenv('SESSIONS_TABLE_NAME')\n",
        "\nfrom os import environ  # noqa: E402\n",
    ],
    ids=["environ", "getenv", "from-os-import-environ"],
)
def test_logic_reading_the_environment_is_caught(tmp_path: Path, planted: str) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.append(CLEANUP_LOGIC, planted)

    violations = copy.violations("layering")

    found(violations, file=CLEANUP_LOGIC, resource="SessionCleanupFunction", containing="reads the environment")


@pytest.mark.parametrize(
    ("module", "planted", "resource", "complaint"),
    [
        (
            CLEANUP_LOGIC,
            "from clockless.config import env_str",
            "SessionCleanupFunction",
            "Job logic reads no configuration",
        ),
        (
            WINDOW_LOGIC,
            "from window_generation import repository",
            "WindowGenerationFunction",
            "window_generation.logic -> window_generation.repository",
        ),
        (KIT_TICK, "import window_generation.logic", "ClocklessLayer", "The kit (layers/) imports no job"),
        (
            CLEANUP_HANDLER,
            "from window_generation.logic import business_date_of",
            "SessionCleanupFunction",
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
    tmp_path: Path, module: str, planted: str, resource: str, complaint: str
) -> None:
    # Given one import planted against the direction the contracts allow
    copy = PlantedCopy.of_project(tmp_path)
    copy.append(module, f"\n{planted}  # noqa: E402\n")

    # When layering checks the copy
    violations = copy.violations("layering")

    # Then it names the importing module, the resource that ships it and the contract it breaks
    violation = found(violations, file=module, resource=resource, containing=complaint)
    assert violation.line == len((copy.root / module).read_text().splitlines())


def test_a_function_package_missing_from_the_contracts_is_caught(tmp_path: Path) -> None:
    # Given the contracts no longer listing cleanup as a layered job
    copy = PlantedCopy.of_project(tmp_path)
    copy.replace(PYPROJECT, '"session_cleanup"', '"window_generation"', after='id = "job-layers"')

    violations = copy.violations("layering")

    found(violations, file=PYPROJECT, resource="SessionCleanupFunction", containing="contract job-layers's containers")


def test_a_project_without_import_contracts_is_caught(tmp_path: Path) -> None:
    copy = PlantedCopy.of_project(tmp_path)
    copy.write(PYPROJECT, '[project]\nname = "clockless"\n')

    violations = copy.violations("layering")

    found(violations, file=PYPROJECT, resource="[tool.importlinter]", containing="no import-linter contracts")
