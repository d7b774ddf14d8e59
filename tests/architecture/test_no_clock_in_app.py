"""Rule `no-clock-in-app`: planted clocks, each caught; text that only mentions one is not."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
KIT_TICK = "layers/clockless/clockless/tick.py"


# ---------------------------------------------------------------------------------------------- no-clock-in-app
@pytest.mark.parametrize(
    ("code", "complaint"),
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
def test_a_clock_in_a_function_is_caught(planted: PlantedCopy, code: str, complaint: str) -> None:
    # Given a module in a function's package that schedules inside the process
    module = f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/timer.py"
    planted.write(module, code)

    # When no-clock-in-app checks the copy
    violations = planted.violations("no-clock-in-app")

    # Then it names the module, the function that ships it and the line
    violation = found(violations, file=module, resource=f"{HOURLY_JOB.stem}Function", containing=complaint)
    assert violation.line is not None


def test_a_clock_in_the_layer_is_caught(planted: PlantedCopy) -> None:
    planted.append(
        KIT_TICK, "\n\ndef _heartbeat() -> None:\n    import time\n\n    while True:\n        time.sleep(30)\n"
    )

    violations = planted.violations("no-clock-in-app")

    found(violations, file=KIT_TICK, resource="ClocklessLayer", containing="time.sleep inside a loop")


def test_code_under_functions_outside_any_codeuri_is_checked_too(planted: PlantedCopy) -> None:
    planted.write("functions/stray/stray.py", "import sched\n")

    violations = planted.violations("no-clock-in-app")

    found(violations, file="functions/stray/stray.py", resource="functions/stray", containing="imports sched")


def test_comments_strings_and_bounded_sleeps_are_not_clocks(planted: PlantedCopy) -> None:
    # Given text that mentions clocks, and a sleep outside any loop
    planted.write(
        f"functions/{HOURLY_JOB.package}/{HOURLY_JOB.package}/notes.py",
        '"""Never `import sched` or `while True: time.sleep(60)` here."""\n\n'
        "import time\n\n"
        "# threading.Timer(60, run).start()\n"
        'WHY = "apscheduler runs in every replica"\n\n\n'
        "def pause() -> None:\n    time.sleep(0.1)\n\n\n"
        "def retry_three_times() -> None:\n    for _ in range(3):\n        time.sleep(0.1)\n",
    )

    assert planted.violations("no-clock-in-app") == []
