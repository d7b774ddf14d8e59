"""`ScheduledJob`: the one way a handler becomes a scheduled job.

A job takes effect once per tick however often the tick is delivered: Powertools idempotency on
DynamoDB, keyed on job + scheduled time (never the execution id, which changes per attempt),
with the Lambda context registered before the claim so an attempt that times out frees it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Protocol

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from clockless.config import (
    CLIENT_ENVIRONMENT,
    PerEnvironment,
    env_int,
    env_str,
    ledger_retention_seconds,
    ledger_table_name,
    local_clock,
    local_tick_grace,
    metrics_namespace,
)
from clockless.errors import DeclarationError
from clockless.items import (
    METRIC_ITEMS_FAILED,
    ItemsFailedError,
    listed,
    parse_tolerance,
)
from clockless.ledger import FAILURES, SUMMARY_LAST_ATTEMPT, SUMMARY_WHOLE_TICK, iso_now
from clockless.local_ticks import MAX_GRACE, METRIC_LOCAL_TICK_MISSED, SUCCESSES_READ, missed_local_ticks
from clockless.observability import Observability, service_logger
from clockless.overlap import DEFAULT_RUNNING_AT_MOST, Held, Overlap, OverlapGuard, parse_overlap
from clockless.persistence import Delivery, LedgeredPersistenceLayer, Phase, Release
from clockless.run import JobFunction, JobRun
from clockless.throttle import SYSTEM_CLOCK, Budget, Clock
from clockless.tick import Tick, Trigger, format_scheduled_time, utc_now

# The idempotency key selects only the tick's identity from the data we hand Powertools.
IDEMPOTENCY_KEY_JMESPATH: Final = "[job, scheduled_time]"

METRIC_SUCCEEDED: Final = "TickSucceeded"
# A fan-out coordinator handed its tick's partitions out; the tick succeeds later (TickSucceeded,
# from the finisher), so the dead-man alarm still waits for the items.
METRIC_FANNED_OUT: Final = "TickFannedOut"
METRIC_DUPLICATE: Final = "DuplicateSuppressed"
METRIC_FAILED: Final = "TickFailed"
# A tick skipped or buffered by the job's overlap policy (the ledger says which and why).
METRIC_HELD: Final = "TickHeldByOverlap"

OUTCOME_EXECUTED: Final = "executed"
OUTCOME_DUPLICATE: Final = "duplicate"
OUTCOME_IN_PROGRESS: Final = "duplicate_in_progress"
# A delivery at an instant that is not the job's local time in any of its zones: its cron fires at
# every hour the local time can fall on (clockless.schedule.local_clock), and this was another.
OUTCOME_NOT_A_TICK: Final = "not_a_tick"


class LambdaContextLike(Protocol):
    aws_request_id: str
    function_name: str

    def get_remaining_time_in_millis(self) -> int: ...


LambdaHandler = Callable[[Any, Any], dict[str, Any]]


# What the idempotency store is made from: the client's endpoint and region, and the settings it
# takes (the expiry included: Powertools configures a store once). The local runtime runs a job's
# coordinator and worker functions in one process, under environments that differ in the
# function's name and the worker's settings: the store (a boto3 session and client) is not made
# again on every such switch.
STORE_ENVIRONMENT: Final = (
    *CLIENT_ENVIRONMENT,
    "IDEMPOTENCY_TABLE_NAME",
    "IDEMPOTENCY_EXPIRY_SECONDS",
    "LEDGER_TABLE_NAME",
    "LEDGER_RETENTION_DAYS",
)


@dataclass(frozen=True, slots=True)
class KitSettings:
    idempotency_table: str
    idempotency_expiry_seconds: int
    ledger_table: str
    ledger_retention_seconds: int
    metrics_namespace: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KitSettings:
        return cls(
            idempotency_table=env_str("IDEMPOTENCY_TABLE_NAME", environ),
            idempotency_expiry_seconds=env_int("IDEMPOTENCY_EXPIRY_SECONDS", environ, minimum=60),
            ledger_table=ledger_table_name(environ),
            ledger_retention_seconds=ledger_retention_seconds(environ),
            metrics_namespace=metrics_namespace(environ),
        )


class ScheduledJob:
    """Declare a job once per function module and decorate its handler with `@job.handler`.

    `persistence_store` is for tests that want to inject a store; by default one is built on
    first use from `IDEMPOTENCY_TABLE_NAME` and `LEDGER_TABLE_NAME`, so importing a handler
    touches no AWS.
    """

    def __init__(
        self,
        name: str,
        *,
        persistence_store: LedgeredPersistenceLayer | None = None,
        overlap: Overlap | str = Overlap.RUN_BOTH,
        running_at_most: timedelta = DEFAULT_RUNNING_AT_MOST,
        tolerated_failures: int | str | None = None,
    ) -> None:
        self.name = name
        # How many items `JobRun.each` may fail with the tick still succeeding (clockless.items).
        self.tolerance = parse_tolerance(tolerated_failures, job=name)
        # What a tick arriving while an earlier one runs does (clockless.overlap; docs/operating.md).
        self.overlap = parse_overlap(overlap, job=name)
        self.running_at_most = running_at_most
        # The job's function, once `@job.handler` made it one (a buffered tick's start runs it).
        self.function: JobFunction | None = None
        self.logger = service_logger(name)
        self.observability = Observability(self.logger, service=name)
        self._injected_store = persistence_store
        self._store = PerEnvironment(self._make_store, STORE_ENVIRONMENT)
        self._settings = PerEnvironment(KitSettings.from_env)
        self._local_clock = PerEnvironment(local_clock, ("LOCAL_TIME", "OPERATING_TIME_ZONES"))
        self._local_tick_grace = PerEnvironment(
            functools.partial(local_tick_grace, longest=MAX_GRACE), ("LOCAL_TICK_GRACE_MINUTES",)
        )
        # Set by `clockless.fanout.FanOut`: this job's ticks are split into this many partitions.
        self.partitions_total: int | None = None
        # Throttles on the kit's own writes are waited out on this clock (tests set their own).
        self.clock: Clock = SYSTEM_CLOCK

    def declare_fan_out(self, partitions_total: int) -> None:
        """The job's ticks fan out into `partitions_total` partitions (called by `FanOut`)."""
        if partitions_total < 1:
            raise DeclarationError(f"a fanned-out job needs at least one partition, got {partitions_total}")
        if self.partitions_total not in (None, partitions_total):
            raise DeclarationError(f"job {self.name!r} already fans out into {self.partitions_total} partitions")
        self.partitions_total = partitions_total

    @property
    def idempotency_key_prefix(self) -> str:
        # Explicit, so renaming or moving the handler does not change every key.
        return f"clockless#{self.name}"

    def settings(self) -> KitSettings:
        return self._settings.get()

    def persistence_store(self) -> LedgeredPersistenceLayer:
        return self._injected_store if self._injected_store is not None else self._store.get()

    def _make_store(self) -> LedgeredPersistenceLayer:
        settings = self.settings()
        return LedgeredPersistenceLayer(
            table_name=settings.idempotency_table,
            ledger_table_name=settings.ledger_table,
            ledger_retention_seconds=settings.ledger_retention_seconds,
        )

    def handler(self, fn: JobFunction) -> LambdaHandler:
        """Make `fn` the job's Lambda handler: parse the tick, claim it, run it once, report it."""

        @functools.wraps(fn)
        def lambda_handler(event: Any, context: Any) -> dict[str, Any]:
            tick = Tick.from_event(event, expected_job=self.name)
            self.watch_local_ticks()
            skipped = self.not_a_tick(tick)
            if skipped is not None:
                return skipped
            return self.deliver(tick, fn, context)

        lambda_handler.clockless_job = self  # type: ignore[attr-defined]
        self.function = fn
        return lambda_handler

    def not_a_tick(self, tick: Tick) -> dict[str, Any] | None:
        """The result for a delivery at an instant that is not the job's local time (LOCAL_TIME) in any
        of its zones, left unclaimed and unrecorded; None for a tick. An off-schedule run is asked for
        at an instant that is no tick, and runs."""
        clock = self._local_clock.get()
        if clock is None or tick.trigger is Trigger.OFF_SCHEDULE or clock.serves(tick.scheduled_time):
            return None
        reason = f"{format_scheduled_time(tick.scheduled_time)} is not {clock.describe()}"
        self.logger.info("delivery dropped: not a tick", extra={**tick.identity, "reason": reason})
        return {**tick.identity, "outcome": OUTCOME_NOT_A_TICK, "reason": reason}

    def watch_local_ticks(self) -> None:
        """A job with a local time: each zone whose latest local tick due by now (at least its grace,
        LOCAL_TICK_GRACE_MINUTES, ago) has not succeeded, as an ERROR line and a `LocalTickMissed`
        datapoint (by job and zone, and by job alone for its alarm). One Query of the ledger per
        delivery, whatever the delivery is (clockless.local_ticks); a job without one asks nothing."""
        clock = self._local_clock.get()
        if clock is None:
            return
        grace = self._local_tick_grace.get()
        now = utc_now()
        succeeded, all_read = self.persistence_store().ledger.latest_successes(self.name, now, SUCCESSES_READ)
        missed = missed_local_ticks(clock, now, grace, succeeded, all_read=all_read)
        if not missed:
            return
        settings = self.settings()
        for zone in missed:
            last_seen = "none read" if zone.last_seen is None else format_scheduled_time(zone.last_seen)
            self.logger.error(
                "local tick missed",
                extra={
                    "job": self.name,
                    "zone": zone.zone,
                    "due": format_scheduled_time(zone.due),
                    "last_local_tick_succeeded": last_seen,
                    "reason": f"{self.name}: no {clock.at:%H:%M} tick in {zone.zone} succeeded since "
                    f"{format_scheduled_time(zone.due)} (its grace {int(grace.total_seconds()) // 60} min "
                    f"is over); the last one seen: {last_seen}",
                },
            )
            metrics = EphemeralMetrics(namespace=settings.metrics_namespace, service=self.name)
            metrics.add_dimension(name="job", value=self.name)
            metrics.add_dimension(name="zone", value=zone.zone)
            # The job's alarm watches the zones together: the same datapoint by job alone.
            metrics.add_dimensions(job=self.name, service=self.name)
            metrics.add_metric(name=METRIC_LOCAL_TICK_MISSED, unit=MetricUnit.Count, value=1)
            metrics.flush_metrics()

    def deliver(self, tick: Tick, fn: JobFunction, context: LambdaContextLike | None) -> dict[str, Any]:
        """One delivery of a tick: held back by the job's overlap policy, or run at most once
        (claimed, executed, completed in the ledger), and reported in metrics and logs."""
        settings = self.settings()
        metrics = self._tick_metrics(tick, settings)
        self._observe(tick, context, settings)
        store = self.persistence_store()
        delivery = Delivery(
            tick,
            request_id=getattr(context, "aws_request_id", None),
            partitions_total=self.partitions_total,
            budget=Budget(context, 0.0, self.clock),
        )
        try:
            held = self._held_by_overlap(tick, store)
            if held is not None:
                self.logger.info("tick held back by overlap", extra={"held": held.status, "reason": held.reason})
                metrics.add_metric(name=METRIC_HELD, unit=MetricUnit.Count, value=1)
                return held.result(tick)
            result = self._run_once(delivery, fn, context, store, metrics)
            self._report(result, delivery, metrics)
            return result
        finally:
            if delivery.items_failed:
                metrics.add_metric(name=METRIC_ITEMS_FAILED, unit=MetricUnit.Count, value=delivery.items_failed)
            metrics.flush_metrics()
            self.logger.thread_safe_clear_keys()

    def _tick_metrics(self, tick: Tick, settings: KitSettings) -> EphemeralMetrics:
        """The delivery's metrics, by job and by trigger."""
        metrics = EphemeralMetrics(namespace=settings.metrics_namespace, service=self.name)
        metrics.add_dimension(name="job", value=self.name)
        # Dead-man alarms watch trigger=schedule only: a manual run must not hide a silent schedule.
        metrics.add_dimension(name="trigger", value=tick.trigger.value)
        return metrics

    def _observe(self, tick: Tick, context: LambdaContextLike | None, settings: KitSettings) -> None:
        """The Lambda context and the tick on every log line of the delivery; a cold start counted."""
        self.observability.invocation(context, metrics_namespace=settings.metrics_namespace)
        self.logger.thread_safe_append_keys(
            correlation_id=tick.key,
            job=tick.job,
            scheduled_time=tick.identity["scheduled_time"],
            attempt=tick.attempt,
            trigger=tick.trigger.value,
            execution_id=tick.execution_id,
        )

    def _run_once(
        self,
        delivery: Delivery,
        fn: JobFunction,
        context: LambdaContextLike | None,
        store: LedgeredPersistenceLayer,
        metrics: EphemeralMetrics,
    ) -> dict[str, Any]:
        """The tick claimed, run and completed through Powertools' idempotency (the first delivery),
        or the first delivery's result (a duplicate), or in progress elsewhere; a failure settled."""
        tick = delivery.tick
        config = IdempotencyConfig(
            event_key_jmespath=IDEMPOTENCY_KEY_JMESPATH,
            raise_on_no_idempotency_key=True,
            expires_after_seconds=self.settings().idempotency_expiry_seconds,
            # Registered before the claim: the in-progress record then expires with this attempt.
            lambda_context=context,  # type: ignore[arg-type]
            response_hook=_mark_duplicate,
        )
        run_once = idempotent_function(
            self._execute,
            data_keyword_argument="tick_identity",
            persistence_store=store.records(delivery),
            config=config,
            key_prefix=self.idempotency_key_prefix,
        )
        try:
            result: dict[str, Any] = run_once(tick_identity=tick.identity, tick=tick, fn=fn, delivery=delivery)
        except IdempotencyAlreadyInProgressError:
            # Another delivery of this tick holds the claim, and it is alive: a failed
            # attempt releases its claim, a timed-out one's claim expires with it, and
            # Lambda's retry of either takes it over. Failing here would set off retries
            # and end in the DLQ for a tick that is being handled.
            return {**tick.identity, "outcome": OUTCOME_IN_PROGRESS}
        except Exception as error:
            result = self._settle_failure(store, delivery, error, metrics)
        return result

    def _report(self, result: Mapping[str, Any], delivery: Delivery, metrics: EphemeralMetrics) -> None:
        """What the delivery did, as a metric and a log line."""
        if result["outcome"] == OUTCOME_IN_PROGRESS:
            self.logger.info("tick already in progress elsewhere; this delivery does nothing")
            metrics.add_metric(name=METRIC_DUPLICATE, unit=MetricUnit.Count, value=1)
            return
        if result["outcome"] == OUTCOME_DUPLICATE:
            self.logger.info("duplicate delivery; returning the first delivery's result")
            metrics.add_metric(name=METRIC_DUPLICATE, unit=MetricUnit.Count, value=1)
            if self.partitions_total is None and delivery.retries_its_holder:
                # The attempt that completed the tick died after it, perhaps before its
                # TickSucceeded was out: Lambda's retry of it reports the success (again, at
                # most once per retry Lambda makes; docs/observability.md).
                self.logger.info("retry of the attempt that completed the tick: reporting its success")
                metrics.add_metric(name=METRIC_SUCCEEDED, unit=MetricUnit.Count, value=1)
            return
        # Last step of a successful run, so a failure can never be counted as a success. A
        # coordinator's tick is not done yet: its finisher emits TickSucceeded.
        done = METRIC_SUCCEEDED if self.partitions_total is None else METRIC_FANNED_OUT
        metrics.add_metric(name=done, unit=MetricUnit.Count, value=1)

    def _held_by_overlap(self, tick: Tick, store: LedgeredPersistenceLayer) -> Held | None:
        """Skipped or buffered behind an earlier tick still running, as the job declared; None:
        run it. `run-both` asks nothing (no request); the others one Query, and a hold one write
        (a `buffer` hold behind a running tick one Query more)."""
        if self.overlap is Overlap.RUN_BOTH:
            return None
        guard = OverlapGuard(store.ledger, self.overlap, running_at_most=self.running_at_most)
        earlier = guard.earlier_running(tick, utc_now())
        return earlier if earlier is None or isinstance(earlier, Held) else guard.hold(tick, earlier)

    def _settle_failure(
        self, store: LedgeredPersistenceLayer, delivery: Delivery, error: Exception, metrics: EphemeralMetrics
    ) -> dict[str, Any]:
        """A delivery that failed: return the result if the tick's work is in fact done and
        recorded, otherwise leave the tick to a retry (claim released) and raise."""
        if delivery.error is not None:
            # The job raised; Powertools released the claim through `store.release`.
            metrics.add_metric(name=METRIC_FAILED, unit=MetricUnit.Count, value=1)
            if error is delivery.error and delivery.released is Release.RELEASED:
                self.logger.exception("tick failed; the claim is released and the ledger says failed")
            elif error is delivery.error:
                self.logger.exception("tick failed; its claim was no longer this delivery's, so nothing was released")
            else:
                self.logger.error(
                    "tick failed and its claim could not be released; Lambda's retry of this request takes it over",
                    exc_info=error,
                )
            # The job's own error is what Scheduler, Lambda and the DLQ must see.
            raise delivery.error
        if delivery.phase in (Phase.CLAIMING, Phase.COMPLETING):
            # The claim or the completion failed, perhaps after DynamoDB applied it (its answer lost).
            step = "claim" if delivery.phase is Phase.CLAIMING else "completion"
            try:
                released = store.release(delivery, f"the {step} was not confirmed: {type(error).__name__}: {error}")
            except Exception as release_error:
                metrics.add_metric(name=METRIC_FAILED, unit=MetricUnit.Count, value=1)
                self.logger.error(
                    f"the tick's {step} failed and its claim could not be released; "
                    "Lambda's retry of this request takes it over",
                    exc_info=release_error,
                )
                raise error from None
            if released is Release.COMPLETED and delivery.result is not None:
                self.logger.warning(f"the {step}'s answer was lost, but DynamoDB had applied it: the tick is done")
                return delivery.result
            metrics.add_metric(name=METRIC_FAILED, unit=MetricUnit.Count, value=1)
            held = (
                "its claim is released and the ledger says failed"
                if released is Release.RELEASED
                else "this delivery holds no claim to release"
            )
            self.logger.exception(f"the tick's {step} failed; {held}; Lambda's retry runs the tick")
            raise error
        metrics.add_metric(name=METRIC_FAILED, unit=MetricUnit.Count, value=1)
        self.logger.exception("tick failed")
        raise error

    def _execute(
        self, *, tick_identity: dict[str, str], tick: Tick, fn: JobFunction, delivery: Delivery
    ) -> dict[str, Any]:
        ledger = self.persistence_store().ledger
        run = JobRun(
            tick,
            load_last_success=lambda: ledger.last_success_before(tick.job, tick.scheduled_time),
            budget=delivery.budget,
            logger=self.logger,
        )
        delivery.phase = Phase.RUNNING
        started = time.monotonic()
        try:
            summary = dict(fn(run))
            delivery.items_failed = len(run.failures)
            if not self.tolerance.allows(len(run.failures), run.items_found):
                raise ItemsFailedError(
                    run.failures, f"clockless run-now {tick.job} --at {tick.identity['scheduled_time']}"
                )
        except Exception as error:
            delivery.error = error
            raise
        result: dict[str, Any] = {
            **tick_identity,
            "outcome": OUTCOME_EXECUTED,
            "summary": summary,
            # A retry after a partial run reports its own share: what the failed attempt did
            # before it stopped is not known to anyone.
            "summary_scope": SUMMARY_LAST_ATTEMPT if delivery.earlier_attempts else SUMMARY_WHOLE_TICK,
            "finished_at": iso_now(),
            "duration_ms": _elapsed_ms(started),
        }
        if run.last_success_known:
            last_success = run.last_success
            result["last_success"] = None if last_success is None else format_scheduled_time(last_success)
        if delivery.rerun:
            result["rerun"] = True
        if run.failures:
            result[FAILURES] = [failure.as_record() for failure in listed(run.failures)]
        self.logger.info("tick executed", extra={"summary": summary, "duration_ms": result["duration_ms"]})
        delivery.result = result
        # Powertools stores this as the tick's result; the completion writes the ledger with it.
        return result


def _mark_duplicate(response: Any, idempotent_data: DataRecord) -> Any:
    """Powertools calls this only when it answers from a completed record instead of running."""
    return {**response, "outcome": OUTCOME_DUPLICATE}


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
