"""When a dead-man alarm fires: its definition evaluated minute by minute against simulated successes.

A model of CloudWatch's metric-alarm evaluation, as documented, for the one shape clockless uses:

- datapoints are the Sum of TickSucceeded per period, periods aligned on the epoch;
- `FILL(m, 0)` gives every period a datapoint (0 when no success landed in it), so CloudWatch
  never has to fall back on "the most recent datapoints successfully retrieved", which would
  let old successes stand in for missing ones;
- the alarm evaluates about every minute; it is in ALARM when at least DatapointsToAlarm of the
  newest EvaluationPeriods datapoints breach (Sum < Threshold).

Which periods are "the newest" is the one thing the documentation leaves open: whether the
period still in progress counts. `Evaluation.COMPLETE` evaluates only periods that have ended;
`Evaluation.PARTIAL` also evaluates the current one. A definition is judged under both: it must
stay quiet under either while every tick succeeds within its grace, and the time to fire after a
missed tick is reported for each (COMPLETE is the later, so the worst case).
"""

from __future__ import annotations

import bisect
import enum
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from clockless.schedule.expressions import ScheduleSpec

# CloudWatch's limits on Period x EvaluationPeriods.
MAX_EVALUATION_RANGE = 7 * 86400
MAX_EVALUATION_RANGE_SHORT_PERIODS = 86400  # for periods under an hour
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STEP = timedelta(minutes=1)


class Evaluation(enum.Enum):
    COMPLETE = "complete periods only"
    PARTIAL = "the period in progress too"


@dataclass(frozen=True)
class DeadManDefinition:
    """The parts of a FILL(TickSucceeded Sum, 0) alarm that decide when it fires."""

    period: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float = 1.0

    @property
    def span(self) -> timedelta:
        return timedelta(seconds=self.period * self.evaluation_periods)

    def limit_problem(self) -> str | None:
        """Why CloudWatch would refuse this definition, or None."""
        if self.period < 60 or self.period % 60:
            return f"Period {self.period} s is not a multiple of 60 s"
        seconds = self.period * self.evaluation_periods
        limit = MAX_EVALUATION_RANGE if self.period >= 3600 else MAX_EVALUATION_RANGE_SHORT_PERIODS
        if seconds > limit:
            return f"Period x EvaluationPeriods is {seconds} s; CloudWatch allows at most {limit} s for this period"
        if not 1 <= self.datapoints_to_alarm <= self.evaluation_periods:
            return "DatapointsToAlarm must be between 1 and EvaluationPeriods"
        return None


def first_alarm(
    definition: DeadManDefinition,
    successes: list[datetime],
    start: datetime,
    end: datetime,
    evaluation: Evaluation = Evaluation.COMPLETE,
) -> datetime | None:
    """The first minute in [start, end) at which the alarm is in ALARM; None if it never is."""
    period = timedelta(seconds=definition.period)
    landed = sorted(successes)
    # The state can only change when a period ends or a success lands: evaluate at those minutes.
    boundaries = []
    boundary = _period_start(start, period) + period
    while boundary < end:
        boundaries.append(boundary)
        boundary += period
    arrivals = [_minute_ceil(moment) for moment in landed if start <= moment < end]
    for moment in sorted({start, *boundaries, *arrivals}):
        newest_end = _period_start(moment, period) + (period if evaluation is Evaluation.PARTIAL else timedelta(0))
        breaching = 0
        for index in range(definition.evaluation_periods):
            period_end = newest_end - period * index
            lo = bisect.bisect_left(landed, period_end - period)
            hi = bisect.bisect_left(landed, min(period_end, moment))  # only what has arrived by now
            if hi - lo < definition.threshold:
                breaching += 1
        if breaching >= definition.datapoints_to_alarm:
            return moment
    return None


def _minute_ceil(moment: datetime) -> datetime:
    floor = moment.replace(second=0, microsecond=0)
    return floor if floor == moment else floor + _STEP


def _period_start(moment: datetime, period: timedelta) -> datetime:
    return _EPOCH + period * ((moment - _EPOCH) // period)


@dataclass(frozen=True)
class Timing:
    """What the simulation showed for one job's alarm."""

    false_alarm: datetime | None  # the first ALARM while every tick succeeded at the end of its grace
    missed_tick: datetime
    fires_after: dict[Evaluation, timedelta | None]  # from the missed tick, previous tick on time
    fires_after_late_previous: timedelta | None  # COMPLETE, the previous tick's success as late as grace allows

    @property
    def worst(self) -> timedelta | None:
        values = [*self.fires_after.values(), self.fires_after_late_previous]
        return None if any(v is None for v in values) else max(v for v in values if v is not None)


def simulate(definition: DeadManDefinition, spec: ScheduleSpec, grace: timedelta, *, around: datetime) -> Timing:
    """Two simulated stretches of the schedule near `around`: every tick succeeding at the last
    minute of its grace (the alarm must stay quiet), and the schedule falling silent at one tick
    (how long until the alarm fires). The silence lasts a day or two gaps, whichever is longer."""
    gap = spec.longest_gap()
    history = definition.span + gap * 2 + timedelta(seconds=definition.period) * 2
    silence = max(timedelta(days=1), gap * 2) + grace + timedelta(seconds=definition.period) * 2
    ticks = spec.ticks_between(around - history, around + silence)
    missed = next(tick for tick in ticks if tick >= around)
    before = [tick for tick in ticks if tick < missed]
    latest = grace - _STEP

    # Alternately on time and at the last minute of the grace: the longest stretch between two
    # successes of a healthy job is then its longest gap plus its grace.
    healthy = [tick + (latest if index % 2 else timedelta(0)) for index, tick in enumerate(ticks)]
    # Judge quiet from when the simulated history fills the alarm's whole evaluation range.
    quiet_from = ticks[0] + definition.span + timedelta(seconds=definition.period)
    false_alarm = None
    for evaluation in Evaluation:
        false_alarm = false_alarm or first_alarm(definition, healthy, quiet_from, around + silence, evaluation)

    fires: dict[Evaluation, timedelta | None] = {}
    for evaluation in Evaluation:
        fired = first_alarm(definition, before, missed, missed + silence, evaluation)
        fires[evaluation] = None if fired is None else fired - missed
    late = first_alarm(definition, [tick + latest for tick in before], missed, missed + silence + grace)
    return Timing(false_alarm, missed, fires, None if late is None else late - missed)
