"""Run-now over HTTP with exactly a scheduled tick's semantics.

Who may press the button (a shared secret, compared in constant time), which tick a request names
(a job of the template and one of its schedule's ticks near now, or an instant the caller
explicitly asks to run off schedule), and whether that tick already ran (the run ledger). Plain
Python: the handler hands in the secret, the schedules, the ledger, the invoker and the clock.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

from clockless.errors import ClocklessError
from clockless.ledger import STATUS_STARTED, STATUS_SUCCEEDED, LedgerEntry
from clockless.pause import Pause
from clockless.schedule.expressions import ScheduleSpec, not_a_tick
from clockless.tick import (
    FUTURE_TICK_ALLOWANCE,
    MAX_ID_LENGTH,
    MalformedTickError,
    Tick,
    Trigger,
    describe,
    echo,
    format_scheduled_time,
    parse_tick_time,
    reject_future,
)
from job_trigger.secret import SecretSource

MAX_BODY_LENGTH: Final = 4096
BODY_FIELDS: Final = ("scheduled_time", "off_schedule", "override_pause")

STATUS_ACCEPTED: Final = "accepted"


class TriggerRejected(ClocklessError):
    """A request the trigger refuses; nothing was read from the ledger or invoked."""

    status_code: int = 400

    def body(self) -> dict[str, Any]:
        raise NotImplementedError


class Unauthorized(TriggerRejected):
    """The same status and body whatever was wrong with the secret: no hint for whoever guesses."""

    status_code = 401

    def __init__(self) -> None:
        super().__init__("unauthorized")

    def body(self) -> dict[str, Any]:
        return {"message": "Unauthorized"}


class UnknownJob(TriggerRejected):
    status_code = 404

    def __init__(self, job: str, known: Sequence[str]) -> None:
        super().__init__(f"no job {echo(job)!r}; the template's jobs are {', '.join(sorted(known))}")

    def body(self) -> dict[str, Any]:
        return {"error": "unknown_job", "field": "job", "message": str(self)}


class BadTickRequest(TriggerRejected):
    status_code = 400

    def __init__(self, field: str, problem: str) -> None:
        # The field may be a key the caller made up: quoted, like any value, by a prefix only.
        self.field = echo(field)
        super().__init__(f"field '{self.field}' {problem}")

    def body(self) -> dict[str, Any]:
        return {"error": "bad_request", "field": self.field, "message": str(self)}


class NotATick(BadTickRequest):
    """The instant is not one of the job's scheduled times and the caller did not ask for an
    off-schedule run: the answer names the scheduled times before and after it."""

    def __init__(self, job: str, spec: ScheduleSpec, moment: datetime) -> None:
        self.before, self.after = spec.ticks_around(moment)
        super().__init__(
            "scheduled_time",
            f'{not_a_tick(spec, job, moment)}; name one of them, or send "off_schedule": true to run at this '
            "instant anyway (recorded with trigger off-schedule)",
        )

    def body(self) -> dict[str, Any]:
        return {
            "error": "not_a_tick",
            "field": self.field,
            "message": str(self),
            "scheduled_before": None if self.before is None else format_scheduled_time(self.before),
            "scheduled_after": None if self.after is None else format_scheduled_time(self.after),
        }


class JobPausedRejected(TriggerRejected):
    """The job is paused (`clockless pause`) and the body does not override the pause: nothing invoked."""

    status_code = 409

    def __init__(self, job: str, pause: Pause) -> None:
        super().__init__(
            f'{pause.describe(job)}: not run; resume it with `clockless resume {job}`, or send "override_pause": '
            "true to run it anyway (recorded in the ledger)"
        )
        self.pause = pause

    def body(self) -> dict[str, Any]:
        return {"error": "paused", "message": str(self), "paused": self.pause.as_dict()}


class TickLedger(Protocol):
    def entry(self, job: str, scheduled_time: datetime) -> LedgerEntry | None:
        """The ledger's record of the tick, read consistently, or None if it was never delivered."""
        ...

    def pause(self, job: str) -> Pause | None:
        """The job's pause (`clockless pause`), read consistently, or None when it is not paused."""
        ...

    def record_override(self, job: str, scheduled_time: datetime, *, by: str, pause: Pause, now: datetime) -> None:
        """Record in the ledger that `by` ran the tick through the job's pause."""
        ...


class RequestRecords(Protocol):
    """The answers given to request ids, kept for the replay window."""

    def first_answer(self, request_id: str, *, now: datetime) -> TriggerResponse | None:
        """The answer recorded for this request id, or None if none is (or it expired)."""
        ...

    def record(self, request_id: str, response: TriggerResponse, *, now: datetime, until: datetime) -> TriggerResponse:
        """Record the answer unless one is recorded already; return the one that stands (the first)."""
        ...


class JobInvoker(Protocol):
    def invoke_async(self, function_arn: str, payload: Mapping[str, str]) -> None:
        """Hand the payload to the function's asynchronous queue, as EventBridge Scheduler does."""
        ...


@dataclass(frozen=True, slots=True)
class TickRequest:
    """One POST /jobs/{job}/ticks, as the handler read it from the API Gateway event."""

    job: str
    presented_secret: str | None
    body: str | None
    body_base64_encoded: bool
    request_id: str | None
    now: datetime


@dataclass(frozen=True, slots=True)
class TriggerResponse:
    status_code: int
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TickBody:
    """What the request body asks for: a scheduled time (None: the schedule's latest tick, or now
    with `off_schedule`), and whether an instant that is not a tick may run anyway."""

    scheduled_time: datetime | None = None
    off_schedule: bool = False
    override_pause: bool = False


def trigger_tick(
    request: TickRequest,
    *,
    secret: SecretSource,
    job_functions: Mapping[str, str],
    job_schedules: Mapping[str, ScheduleSpec],
    window: timedelta,
    ledger: TickLedger,
    invoker: JobInvoker,
    requests: RequestRecords | None = None,
) -> TriggerResponse:
    """Authenticate, name the tick, and run it unless the ledger says it already succeeded.

    202: the tick was handed to its job's function (which runs it at most once, like any
    delivery). 200: it had succeeded before; its recorded outcome, nothing invoked. Raises
    `TriggerRejected` (401, 404, 400) before anything is read or invoked: 400 also for an instant
    that is not one of the job's scheduled times (`job_schedules`, the same jobs as
    `job_functions`) unless the body asks for an off-schedule run.

    A request id seen within `window` (a replayed or resent request) gets the answer its first
    request got, and nothing is invoked again (`requests`).
    """
    # First, so a caller without the secret learns nothing, not even which jobs exist.
    if not secret.load().accepts(request.presented_secret):
        raise Unauthorized
    request_id = request.request_id or None
    if requests is not None and request_id is not None:
        first = requests.first_answer(request_id, now=request.now)
        if first is not None:
            return first
    response = _answer(
        request,
        job_functions=job_functions,
        job_schedules=job_schedules,
        window=window,
        ledger=ledger,
        invoker=invoker,
    )
    if requests is not None and request_id is not None:
        return requests.record(request_id, response, now=request.now, until=request.now + window)
    return response


def _answer(
    request: TickRequest,
    *,
    job_functions: Mapping[str, str],
    job_schedules: Mapping[str, ScheduleSpec],
    window: timedelta,
    ledger: TickLedger,
    invoker: JobInvoker,
) -> TriggerResponse:
    """The tick the request names: answered from the ledger if it succeeded before, else handed to
    its job's function."""
    function_arn = job_functions.get(request.job)
    if function_arn is None:
        raise UnknownJob(request.job, list(job_functions))
    text = request_body(request.body, base64_encoded=request.body_base64_encoded)
    asked = tick_body(text, now=request.now, window=window)
    spec = job_schedules[request.job]
    scheduled_time, trigger = tick_to_run(request.job, asked, spec, now=request.now, window=window)
    # A paused job runs through this door only when the caller says so, and the ledger records it.
    pause = ledger.pause(request.job)
    if pause is not None and not asked.override_pause:
        raise JobPausedRejected(request.job, pause)
    entry = ledger.entry(request.job, scheduled_time)
    if entry is not None and entry.status == STATUS_SUCCEEDED:
        return _succeeded_before(request.job, scheduled_time, entry)
    if pause is not None:
        who = f"http trigger (request {echo(request.request_id or '-')})"
        ledger.record_override(request.job, scheduled_time, by=who, pause=pause, now=request.now)
    response = _handed_over(
        request, scheduled_time, trigger=trigger, entry=entry, function_arn=function_arn, invoker=invoker
    )
    if pause is not None:
        response.body["pause_overridden"] = pause.as_dict()
    return response


def tick_to_run(
    job: str, asked: TickBody, spec: ScheduleSpec, *, now: datetime, window: timedelta
) -> tuple[datetime, Trigger]:
    """The scheduled time to run and the trigger the ledger records for it.

    Without a time: the schedule's latest tick (within the kit's clock-skew allowance, so a caller
    whose clock runs a little ahead names the tick it means), refused when it is older than
    `window`; with `off_schedule` and no time, the current minute. A named time that is not a
    tick is refused (`NotATick`) unless `off_schedule`; then it runs with trigger `off-schedule`.
    """
    if asked.scheduled_time is not None:
        scheduled_time = asked.scheduled_time
    elif asked.off_schedule:
        scheduled_time = _minute(now)
    else:
        latest = spec.previous_tick(now + FUTURE_TICK_ALLOWANCE)
        if latest is None:
            raise BadTickRequest(
                "scheduled_time",
                f"was not sent, and {job}'s schedule {spec.expression} has no tick at or before now "
                f"({format_scheduled_time(now)})",
            )
        if now - latest > window:
            raise BadTickRequest(
                "scheduled_time",
                f"was not sent, and {job}'s latest tick {format_scheduled_time(latest)} is more than "
                f"{_minutes(window)} minutes before now ({format_scheduled_time(now)}): replay it with "
                '`clockless backfill`, or send "off_schedule": true to run at this minute',
            )
        scheduled_time = latest
    if spec.is_tick(scheduled_time):
        return scheduled_time, Trigger.HTTP
    if not asked.off_schedule:
        raise NotATick(job, spec, scheduled_time)
    return scheduled_time, Trigger.OFF_SCHEDULE


def _identity(job: str, scheduled_time: datetime) -> dict[str, str]:
    """The tick's identity, which is also its ledger key."""
    return {"job": job, "scheduled_time": format_scheduled_time(scheduled_time)}


def _succeeded_before(job: str, scheduled_time: datetime, entry: LedgerEntry) -> TriggerResponse:
    """200: the ledger's record of the tick's success; nothing is invoked."""
    identity = _identity(job, scheduled_time)
    return TriggerResponse(
        200,
        {
            **identity,
            "status": STATUS_SUCCEEDED,
            "invoked": False,
            "ledger_key": identity,
            "attempts": entry.attempts,
            "trigger": entry.trigger,
            "finished_at": entry.finished_at,
            "summary": entry.summary,
        },
    )


def _handed_over(
    request: TickRequest,
    scheduled_time: datetime,
    *,
    trigger: Trigger,
    entry: LedgerEntry | None,
    function_arn: str,
    invoker: JobInvoker,
) -> TriggerResponse:
    """202: the tick, as the scheduler would deliver it, handed to its job's function."""
    tick = Tick(
        job=request.job,
        scheduled_time=scheduled_time,
        schedule_arn=None,
        attempt=1,
        # The API request id plays the scheduler's execution id: per delivery, never the identity.
        execution_id=_execution_id(request.request_id),
        trigger=trigger,
    )
    payload = tick.to_event()
    # A started, failed or skipped tick is delivered again: the job's own idempotency makes a
    # delivery that finds it still running do nothing, and a stuck or failed tick needs this press.
    invoker.invoke_async(function_arn, payload)
    identity = _identity(request.job, scheduled_time)
    accepted: dict[str, Any] = {
        **identity,
        "status": STATUS_ACCEPTED,
        "invoked": True,
        "ledger_key": identity,
        "previous_status": None if entry is None else entry.status,
        "tick": payload,
    }
    if entry is not None and entry.status == STATUS_STARTED:
        accepted["note"] = "the ledger shows this tick started; if that delivery still runs, this one does nothing"
    return TriggerResponse(202, accepted)


def tick_body(body: str | None, *, now: datetime, window: timedelta) -> TickBody:
    """What the body asks for: an optional `scheduled_time` and `off_schedule` (default false).

    Raises `BadTickRequest` naming the field for a body that is not a JSON object, an unknown
    field, an `off_schedule` that is not a JSON boolean, a time that is not a whole minute once in
    UTC, one from the future (the kit's clock-skew allowance, no more), or one more than `window`
    in the past.
    """
    if body is None or not body.strip():
        return TickBody()
    if len(body) > MAX_BODY_LENGTH:
        raise BadTickRequest("<body>", f"is longer than {MAX_BODY_LENGTH} characters")
    try:
        parsed = json.loads(body)
    except json.JSONDecodeError as error:
        raise BadTickRequest("<body>", f"is not JSON ({error.msg} at position {error.pos})") from None
    if not isinstance(parsed, dict):
        raise BadTickRequest("<body>", f"must be a JSON object, got {describe(parsed)}")
    unknown = sorted(set(parsed) - set(BODY_FIELDS))
    if unknown:
        raise BadTickRequest(unknown[0], f"is not accepted (allowed: {', '.join(BODY_FIELDS)})")
    off_schedule = parsed.get("off_schedule", False)
    if not isinstance(off_schedule, bool):
        raise BadTickRequest("off_schedule", f"must be true or false, got {describe(off_schedule)}")
    override_pause = parsed.get("override_pause", False)
    if not isinstance(override_pause, bool):
        raise BadTickRequest("override_pause", f"must be true or false, got {describe(override_pause)}")
    raw = parsed.get("scheduled_time")
    if raw is None:
        return TickBody(off_schedule=off_schedule, override_pause=override_pause)
    try:
        scheduled_time = parse_tick_time(raw)
        # The same rule as the kit's, which checks the delivered tick again on its own clock.
        reject_future(scheduled_time, now=now)
    except MalformedTickError as error:
        raise BadTickRequest("scheduled_time", error.problem) from None
    if now - scheduled_time > window:
        raise BadTickRequest(
            "scheduled_time",
            f"{format_scheduled_time(scheduled_time)} is more than {_minutes(window)} minutes before now "
            f"({format_scheduled_time(now)}); replay older ticks with `clockless backfill`",
        )
    return TickBody(scheduled_time, off_schedule, override_pause)


def request_body(raw: str | None, *, base64_encoded: bool) -> str | None:
    """The body as text; API Gateway base64-encodes bodies it does not recognise as text."""
    if raw is None or not base64_encoded:
        return raw
    if len(raw) > (MAX_BODY_LENGTH * 4) // 3 + 4:
        raise BadTickRequest("<body>", f"is longer than {MAX_BODY_LENGTH} characters")
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8")
    except ValueError:  # binascii.Error, UnicodeDecodeError, and a body that is not even ASCII
        raise BadTickRequest("<body>", "is not base64-encoded UTF-8 text") from None


def _execution_id(request_id: str | None) -> str | None:
    # API Gateway's ids are short; one that is not is dropped rather than failing the press.
    return request_id if request_id and len(request_id) <= MAX_ID_LENGTH else None


def _minutes(window: timedelta) -> int:
    return int(window.total_seconds() // 60)


def _minute(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(second=0, microsecond=0)
