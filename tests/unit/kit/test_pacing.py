"""Pacing on a fake clock: the token bucket holds a worker to its shard key's write units per
second, and the adaptive rate halves on a throttle and creeps back up after successes."""

from __future__ import annotations

import pytest

from clockless.fanout.pacing import Pacer, PacingSettings
from clockless.fanout.retry import CONTINUATION_DELAY_CAP_SECONDS, continuation_delay
from clockless.fanout.worker import PartitionWorker
from clockless.job import ScheduledJob
from tests.unit.kit.conftest import Aws
from tests.unit.kit.fake_clock import FakeClock
from tests.unit.kit.toy import TOY_JOB, FixedWork

LIMIT = PacingSettings(max_units_per_s=1000, min_units_per_s=50, increase_units_per_s=25)


def test_a_run_starts_with_a_second_of_burst_then_holds_to_the_rate() -> None:
    clock = FakeClock()
    pacer = Pacer(LIMIT, clock)
    for _ in range(10):
        pacer.take(98)  # 49 items x 2 units: a full transaction
    assert clock.waited == 0  # 980 units: within the first second's bucket
    for _ in range(100):
        pacer.take(98)
    # 110 transactions of 98 units = 10,780 units: 9.78 s at 1,000 units/s after the 1 s burst
    assert clock.waited == pytest.approx(10.78 - 1.0)


def test_units_offered_never_exceed_the_rate_over_time() -> None:
    clock = FakeClock()
    pacer = Pacer(LIMIT, clock)
    start = clock.now()
    offered = 0
    while clock.now() - start < 60:
        pacer.take(198)
        offered += 198
    assert offered <= 1000 * (clock.now() - start) + 1000 + 198


def test_a_throttle_halves_the_rate_down_to_its_floor() -> None:
    pacer = Pacer(LIMIT, FakeClock())
    pacer.throttled()
    assert pacer.rate == 500
    for _ in range(10):
        pacer.throttled()
    assert pacer.rate == 50
    assert pacer.throttles == 11


def test_successes_creep_back_up_to_the_ceiling() -> None:
    pacer = Pacer(LIMIT, FakeClock())
    pacer.throttled()
    for _ in range(10):
        pacer.succeeded()
    assert pacer.rate == 750
    for _ in range(100):
        pacer.succeeded()
    assert pacer.rate == 1000


def test_after_a_throttle_there_is_no_burst_and_the_slower_rate_holds() -> None:
    clock = FakeClock()
    pacer = Pacer(LIMIT, clock)
    pacer.throttled()  # 500 units/s, bucket emptied
    pacer.take(500)
    assert clock.waited == pytest.approx(1.0)


def test_bad_pacing_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="minimum <= maximum"):
        PacingSettings(max_units_per_s=10, min_units_per_s=20, increase_units_per_s=1)
    with pytest.raises(ValueError, match="increase must be positive"):
        PacingSettings(max_units_per_s=10, min_units_per_s=1, increase_units_per_s=0)


def test_a_throttled_partition_comes_back_after_seconds_growing_to_a_minute() -> None:
    delays = [[continuation_delay(n) for _ in range(50)] for n in range(8)]
    assert all(3 <= d <= 5 for d in delays[0])
    assert all(5 <= d <= 10 for d in delays[1])
    assert all(30 <= d <= CONTINUATION_DELAY_CAP_SECONDS for row in delays[4:] for d in row)
    assert max(max(row) for row in delays) <= 60


def test_a_warm_workers_pacer_follows_pacing_settings_changed_after_its_first_tick(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a warm worker whose partition's pacer was halved by a throttle on its first tick
    worker = PartitionWorker(ScheduledJob(TOY_JOB), ["0"], lambda: FixedWork([]))
    first = worker.pacer("0")
    first.throttled()
    assert worker.pacer("0") is first  # kept across its invocations while nothing changed

    # WHEN its environment's pacing changes (the local runtime, or the bench, running it again)
    monkeypatch.setenv("WORK_KEY_WRITE_UNITS_PER_SECOND", "400")

    # THEN the next run paces by the new settings, from their ceiling
    again = worker.pacer("0")
    assert again is not first
    assert again.settings.max_units_per_s == 400
    assert again.rate == 400
