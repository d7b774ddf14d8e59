"""What a simulation is asked for: the range, the seed, the dropped ticks, the endpoint; and bad input
refused with a clear error."""

from __future__ import annotations

import math
import socket
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from clockless import format_scheduled_time
from clockless.overlap import Overlap
from clockless.schedule.expressions import ScheduleExpressionError
from clockless_tools.errors import ToolError
from clockless_tools.local.capacity import Start
from clockless_tools.local.seed import SeedPlan
from clockless_tools.template.loader import PROJECT_ROOT, TemplateError
from clockless_tools.template.model import Template

BOOKKEEPING_KINDS: Final = frozenset({"idempotency", "ledger"})
DEFAULT_LOG: Final = PROJECT_ROOT / ".clockless" / "simulate-function-output.log"
Progress = Callable[[str, int, int], None]
Note = Callable[[str], None]


# The index keys per partition of the replays on their own tables (clockless_tools.simulate.index_keys).
DEFAULT_KEYS_PER_PARTITION: Final = 1


class SimulationInputError(ToolError, ValueError):
    """Bad input (range, --drop, template): nothing was run."""


class SimulationError(ToolError, RuntimeError):
    """A replay process broke down (not a finding about the jobs): the message says where."""


def parse_utc(text: str, *, option: str) -> datetime:
    """An ISO-8601 instant that names its zone (`Z` or an offset), in UTC, whole seconds."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SimulationInputError(f"{option} {text!r} is not an ISO-8601 time (e.g. 2026-11-27T00:00:00Z)") from None
    if moment.tzinfo is None:
        raise SimulationInputError(f"{option} {text!r} names no time zone: write it in UTC, e.g. {text.strip()}Z")
    return moment.astimezone(UTC).replace(microsecond=0)


def parse_drop(text: str) -> tuple[str, datetime]:
    """`JOB@UTC_TIME`: that tick is never delivered."""
    job, separator, moment = text.partition("@")
    if not separator or not job.strip():
        raise SimulationInputError(f"--drop {text!r} must be JOB@UTC_TIME, e.g. session-cleanup@2026-11-28T03:00:00Z")
    return job.strip(), parse_utc(moment, option=f"--drop {job.strip()}@")


def check_endpoint(url: str) -> str:
    """`--endpoint` must be an http(s) URL something listens on; checked before anything runs."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SimulationInputError(f"--endpoint {url!r} is not an http(s) URL, e.g. http://127.0.0.1:8765")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=2).close()
    except OSError as error:
        raise SimulationInputError(
            f"--endpoint {url}: nothing answers ({error.strerror or error}); start it with `clockless local up`"
        ) from None
    return url.rstrip("/")


def expected_ticks(template: Template, start: datetime, end: datetime) -> dict[str, list[datetime]]:
    ticks = {}
    for job, schedule in template.jobs.items():
        try:
            ticks[job] = schedule.spec(template).ticks_between(start, end)
        except ScheduleExpressionError as error:
            raise SimulationInputError(str(error)) from None
    return ticks


# `make run`'s default day samples a job that ticks more often than hourly, so its cost does not grow
# with the schedule: each hour's first tick, and the run of consecutive ticks from the day's last
# hour (late copies landing after the next tick, items one tick leaves to the next), at most
# 24 + 5 ticks a job a day; `--full` and a `--from` range deliver every tick (docs/simulation.md).
SAMPLED_CONSECUTIVE: Final = 6
HOUR: Final = timedelta(hours=1)


def sampled_ticks(
    times: list[datetime], *, start: datetime, end: datetime, keep: Collection[datetime] = ()
) -> list[datetime]:
    """The ticks a sampled run delivers: all of them when there are no more than the range's hours;
    else each hour's first, the run of consecutive ones from the range's last hour, and `keep`."""
    if len(times) <= math.ceil((end - start) / HOUR):
        return times
    first_of_hour: dict[datetime, datetime] = {}
    for moment in times:
        first_of_hour.setdefault(moment.replace(minute=0, second=0, microsecond=0), moment)
    last_hour = next((i for i, moment in enumerate(times) if moment >= end - HOUR), len(times))
    consecutive = set(times[last_hour : last_hour + SAMPLED_CONSECUTIVE])
    return sorted(set(first_of_hour.values()) | consecutive | (set(keep) & set(times)))


@dataclass(frozen=True)
class SimulationRequest:
    template: Template
    start: datetime
    end: datetime
    seed: int = 7
    drops: tuple[tuple[str, datetime], ...] = ()
    endpoint: str | None = None
    seed_plan: SeedPlan = SeedPlan()
    log_path: Path = DEFAULT_LOG
    # DynamoDB's write throughput enforced on the simulation's embedded DynamoDB (None: unlimited)
    capacity: str | None = None
    scale: float = 1.0
    # A slow night: the fanned-out jobs' workers lag (clockless_tools.simulate.slow_night), and
    # `overlap` replaces every job's declared overlap policy (None: each its own).
    slow_night: bool = False
    overlap: str | None = None
    # A night with bad rows (clockless_tools.simulate.bad_rows): each job's demo plants rows it cannot use.
    bad_rows: bool = False
    # `make run`'s default day: a job ticking more often than hourly is sampled (`sampled_ticks`).
    sample: bool = False
    # The index keys each partition of a fanned-out job reads in the replays (None: 1 on the
    # simulation's own tables, the jobs' own counts against --endpoint): clockless_tools.simulate.index_keys.
    keys_per_partition: int | None = None

    @property
    def replayed_keys_per_partition(self) -> int | None:
        """The count the replays run the jobs at (None: the jobs' own)."""
        if self.endpoint is not None:
            return None
        return DEFAULT_KEYS_PER_PARTITION if self.keys_per_partition is None else self.keys_per_partition

    def scheduled(self) -> dict[str, int]:
        """Every job's ticks in the range, sampled or not: what a sampled run says it left out of."""
        return {job: len(times) for job, times in expected_ticks(self.template, self.start, self.end).items()}

    def validate(self) -> dict[str, list[datetime]]:
        self._validate_capacity()
        if self.overlap is not None and self.overlap not in {policy.value for policy in Overlap}:
            choices = ", ".join(policy.value for policy in Overlap)
            raise SimulationInputError(f"--overlap {self.overlap!r}: choose one of {choices}")
        if self.overlap is not None and not self.slow_night:
            raise SimulationInputError("--overlap needs --slow-night (without it no tick overlaps another)")
        if self.bad_rows and self.endpoint is not None:
            raise SimulationInputError(
                "--bad-rows plants rows while the simulation seeds its own embedded DynamoDB; "
                "a running one (--endpoint) is seeded by `clockless local seed`: drop --endpoint or --bad-rows"
            )
        if self.keys_per_partition is not None and self.endpoint is not None:
            raise SimulationInputError(
                "--keys-per-partition applies to the tables the simulation seeds; a running DynamoDB (--endpoint) "
                "was seeded at the jobs' own counts: drop --endpoint or --keys-per-partition"
            )
        if self.keys_per_partition is not None and self.keys_per_partition < 1:
            raise SimulationInputError(
                f"--keys-per-partition {self.keys_per_partition}: a partition reads one key or more"
            )
        if self.start >= self.end:
            raise SimulationInputError(
                f"--from {format_scheduled_time(self.start)} is not before --to {format_scheduled_time(self.end)}"
            )
        ticks = expected_ticks(self.template, self.start, self.end)
        if not ticks:
            raise SimulationInputError(f"{self.template.path} declares no schedules (ScheduleV2 events)")
        for job, moment in self.drops:
            if job not in ticks:
                known = ", ".join(ticks)
                raise SimulationInputError(f"--drop {job}@...: unknown job (the template schedules: {known})")
            if moment not in ticks[job]:
                raise SimulationInputError(
                    f"--drop {job}@{format_scheduled_time(moment)}: not a tick of {job} "
                    f"({self.template.jobs[job].expression}) between --from and --to"
                )
        if not self.sample:
            return ticks
        kept = {job: [moment for j, moment in self.drops if j == job] for job in ticks}
        return {
            job: sampled_ticks(times, start=self.start, end=self.end, keep=kept[job]) for job, times in ticks.items()
        }

    def _validate_capacity(self) -> None:
        if self.capacity is not None and self.capacity not in {start.value for start in Start}:
            raise SimulationInputError(f"--capacity {self.capacity!r}: choose one of {_capacity_choices()}")
        if not self.scale > 0:
            raise SimulationInputError(f"--scale {self.scale:g}: must be positive (it divides every throughput limit)")
        if self.capacity is None and self.scale != 1:
            raise SimulationInputError(f"--scale {self.scale:g} needs --capacity ({_capacity_choices()})")
        if self.capacity is not None and self.endpoint is not None:
            raise SimulationInputError(
                "--capacity applies to the simulation's own embedded DynamoDB; a running server (`clockless local up`) "
                "enforces no capacity: drop --endpoint or --capacity"
            )


def _capacity_choices() -> str:
    return ", ".join(start.value for start in Start)


def last_whole_hour(now: datetime | None = None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def load_template_for_simulation(path: Path) -> Template:
    try:
        return Template.load(path)
    except TemplateError as error:
        raise SimulationInputError(str(error)) from None
