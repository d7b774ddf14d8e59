"""Rule `no-wall-clock`: a clock read planted in any job's code is caught, in every spelling; the
kit reads the clock only in its named exceptions; text that mentions a clock is not a read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from clockless_tools.architecture import Project
from clockless_tools.architecture.no_wall_clock import KIT_CLOCK_READS, NO_WALL_CLOCK, check_no_wall_clock, clock_reads
from clockless_tools.architecture.project import SourceFile
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


def test_getattr_of_a_clock_planted_in_a_jobs_logic_is_caught(planted: PlantedCopy) -> None:
    function_id = next(iter(PROJECT.template.scheduled_functions))
    module = Path(_handler(function_id)).with_name("clock.py").as_posix()
    planted.write(
        module, 'import datetime\n\n\ndef cutoff() -> object:\n    return getattr(datetime, "datetime").now()\n'
    )

    violations = planted.violations(NO_WALL_CLOCK)

    found(violations, file=module, resource=function_id, containing="(datetime.datetime.now)")


# Each spelling of reading the clock, as the rule names what it read.
SPELLINGS = {
    "getattr": ("import datetime\n\nX = getattr(datetime.datetime, 'now')()\n", "datetime.datetime.now"),
    "getattr-of-class": (
        "from datetime import datetime\n\nX = getattr(datetime, 'utcnow')()\n",
        "datetime.datetime.utcnow",
    ),
    "getattr-computed": ("import time\n\nNAME = 'ti' + 'me'\nX = getattr(time, NAME)()\n", "time.<computed>"),
    "import-as": ("from datetime import datetime as dt\n\nX = dt.now()\n", "datetime.datetime.now"),
    "class-alias": ("import datetime\n\nMoment = datetime.datetime\nX = Moment.utcnow()\n", "datetime.datetime.utcnow"),
    "alias-of-alias": ("import time\n\nT = time\nclock = T.time\n", "time.time"),
    "tuple-alias": ("import time\n\nclock, pause = time.time, 1\n", "time.time"),
    "walrus": ("import time\n\nif clock := time.time_ns:\n    pass\n", "time.time_ns"),
    "star-import": ("from time import *\n\nX = time()\n", "time.time"),
    "dunder-import": ("X = __import__('time').time()\n", "time.time"),
    "import-module": ("import importlib\n\nX = importlib.import_module('time').time()\n", "time.time"),
    "sys-modules": ("import sys\n\nX = sys.modules['time'].time()\n", "time.time"),
    "vars": ("import time\n\nX = vars(time)['time']()\n", "time.time"),
    "dunder-dict": ("import datetime\n\nX = datetime.datetime.__dict__['now']\n", "datetime.datetime.now"),
    "subclass": (
        "from datetime import datetime\n\n\nclass M(datetime):\n    pass\n\n\nX = M.now()\n",
        "datetime.datetime.now",
    ),
    "attrgetter": (
        "import datetime\nimport operator\n\nX = operator.attrgetter('now')(datetime.datetime)()\n",
        "datetime.datetime.now",
    ),
    "clock-gettime": ("import time\n\nX = time.clock_gettime(time.CLOCK_REALTIME)\n", "time.clock_gettime"),
    # Whatever the receiver: a datetime instance's now() reads the clock, and so does its type's.
    "instance-now": ("def f(run: object) -> object:\n    return run.tick.scheduled_time.now()\n", "<object>.now"),
    "type-of-utcnow": ("def f(run: object) -> object:\n    return type(run.tick).utcnow()\n", "<object>.utcnow"),
    "methodcaller": ("import operator\n\nTODAY = operator.methodcaller('today')\n", "<object>.today"),
    "getattr-now": ("def f(moment: object) -> object:\n    return getattr(moment, 'now')()\n", "<object>.now"),
    "pandas": ("import pandas as pd\n\nX = pd.Timestamp.now()\n", "pandas.Timestamp.now"),
}


def _reads(code: str, *, kit: bool = False) -> list[str]:
    source = SourceFile(Path("clock.py"), "clock.py", "job.clock", "JobFunction", ast.parse(code))
    return [read.name for read in clock_reads(source, kit=kit)]


@pytest.mark.parametrize(("code", "read"), SPELLINGS.values(), ids=SPELLINGS.keys())
def test_a_clock_read_is_found_however_it_is_spelled(code: str, read: str) -> None:
    assert _reads(code) == [read]


def test_durations_and_attributes_that_read_no_clock_are_not_reads() -> None:
    code = (
        "import time\n\n\ndef took(error: object, started: float) -> object:\n"
        "    cause = getattr(error, 'cause', None)\n"
        "    return cause, time.monotonic() - started, time.perf_counter()\n"
    )

    assert _reads(code) == []
    # The kit's injected clocks (`self.clock.now()`) are its own: only its named readers count there.
    assert _reads("def f(self: object) -> object:\n    return self.clock.now()\n", kit=True) == []


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
