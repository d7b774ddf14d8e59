"""Rule `no-wall-clock`: a clock read planted in any job's code is caught, in every spelling; the
kit reads the clock only in its named exceptions; text that mentions a clock is not a read."""

from __future__ import annotations

from pathlib import Path

import pytest

from clockless_tools.architecture import Project
from clockless_tools.architecture.no_wall_clock import KIT_CLOCK_READS, NO_WALL_CLOCK, check_no_wall_clock, clock_reads
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy, found

PROJECT = Project.at(PROJECT_ROOT)
KIT_FANOUT = "layers/clockless/clockless/fanout/__init__.py"


def _handler(function_id: str) -> str:
    path = PROJECT.handler_location(PROJECT.template.function(function_id)).path
    assert path is not None, function_id
    return PROJECT.relative(path)


# Every function that runs a job's decisions: each scheduled function and each worker, whatever the jobs.
JOB_FUNCTIONS = sorted({*PROJECT.template.scheduled_functions, *PROJECT.template.worker_functions})


@pytest.mark.parametrize("function_id", JOB_FUNCTIONS)
def test_datetime_now_planted_in_any_jobs_handler_is_caught(planted: PlantedCopy, function_id: str) -> None:
    # Given a handler that decides from the clock instead of the tick
    handler = _handler(function_id)
    planted.append(
        handler,
        "\n\ndef _cutoff() -> object:\n    from datetime import UTC, datetime\n\n    return datetime.now(UTC)\n",
    )

    # When no-wall-clock checks the copy
    violations = planted.violations(NO_WALL_CLOCK)

    # Then it names the file, the function that ships it (a worker shares its coordinator's CodeUri),
    # the line and what was read
    owner = PROJECT.source(PROJECT_ROOT / handler).owner
    assert owner in (function_id, PROJECT.template.function(function_id).worker_of)
    violation = found(violations, file=handler, resource=owner, containing="datetime.datetime.now")
    assert violation.line is not None
    assert "run.tick.scheduled_time" in violation.fix


@pytest.mark.parametrize(
    ("code", "read"),
    [
        ("import datetime as dt\n\nNOW = dt.datetime.utcnow()\n", "datetime.datetime.utcnow"),
        ("from datetime import date\n\n\ndef today() -> date:\n    return date.today()\n", "datetime.date.today"),
        ("import time\n\n\ndef stamp() -> float:\n    return time.time()\n", "time.time"),
        ("from time import time_ns as clock\n\nSTARTED = clock()\n", "time.time_ns"),
        ("import time\n\nHOUR = time.localtime().tm_hour\n", "time.localtime"),
        (
            "from dataclasses import dataclass, field\nfrom datetime import datetime\n\n\n@dataclass\n"
            "class Cut:\n    at: datetime = field(default_factory=datetime.now)\n",
            "datetime.datetime.now",
        ),
        ("from clockless.tick import utc_now\n\nAS_OF = utc_now()\n", "clockless.tick.utc_now"),
    ],
    ids=["utcnow-aliased", "date-today", "time-time", "time-ns-renamed", "localtime", "default-factory", "kit-reader"],
)
def test_every_spelling_of_a_clock_read_in_a_jobs_logic_is_caught(planted: PlantedCopy, code: str, read: str) -> None:
    function_id = next(iter(PROJECT.template.scheduled_functions))
    module = Path(_handler(function_id)).with_name("clock.py").as_posix()
    planted.write(module, code)

    violations = planted.violations(NO_WALL_CLOCK)

    found(violations, file=module, resource=function_id, containing=f"({read})")


def test_a_clock_read_in_the_kit_outside_its_named_exceptions_is_caught(planted: PlantedCopy) -> None:
    planted.append(KIT_FANOUT, "\n\ndef _deadline() -> float:\n    import time\n\n    return time.time() + 60\n")

    violations = planted.violations(NO_WALL_CLOCK)

    violation = found(violations, file=KIT_FANOUT, resource="ClocklessLayer", containing="named exceptions")
    assert "clockless.fanout._deadline" in violation.message


def test_each_named_kit_exception_reads_the_clock_so_none_is_stale() -> None:
    reads = {read.where for s in PROJECT.sources if s.owner in PROJECT.layer_dirs for read in clock_reads(s, kit=True)}

    assert reads == set(KIT_CLOCK_READS)
    assert list(check_no_wall_clock(PROJECT)) == []


def test_mentions_and_monotonic_durations_are_not_clock_reads(planted: PlantedCopy) -> None:
    function_id = next(iter(PROJECT.template.scheduled_functions))
    planted.write(
        Path(_handler(function_id)).with_name("notes.py").as_posix(),
        '"""Never `datetime.now()` or `time.time()` here: the tick says when."""\n\n'
        "import time\n\n"
        "# cutoff = datetime.now(UTC)\n"
        'WHY = "time.time() differs between deliveries"\n\n\n'
        "def took_ms(started: float) -> int:\n    return round((time.monotonic() - started) * 1000)\n",
    )

    assert planted.violations(NO_WALL_CLOCK) == []
