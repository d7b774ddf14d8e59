"""Properties of tick parsing, for whatever JSON arrives: the answer is a valid tick that
round-trips through its payload, or a typed error naming a field with a short message. Never
another exception (OverflowError, TypeError, RecursionError...), never a long echo."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from clockless.schedule.expressions import ScheduleSpec
from clockless.tick import (
    FUTURE_TICK_ALLOWANCE,
    MAX_ATTEMPT,
    MAX_ID_LENGTH,
    MalformedTickError,
    Tick,
    Trigger,
    echo,
    format_scheduled_time,
    parse_tick_time,
)
from job_trigger.logic import BODY_FIELDS, BadTickRequest, TickRequest, tick_body, trigger_tick
from tests.unit.test_job_trigger_logic import CURRENT, JOBS, FakeInvoker, FakeLedger, FakeSecret

JOB = "hourly-sweep"  # one of the trigger logic tests' made-up jobs (JOBS)
# Every minute a tick, so every due minute a body names reaches the job: the schedule's refusals
# are the trigger logic tests'.
EVERY_MINUTE = {job: ScheduleSpec.of("cron(* * * * ? *)") for job in JOBS}
NOW = datetime(2026, 11, 29, 9, 20, 17, tzinfo=UTC)
WINDOW = timedelta(minutes=15)
TICK_FIELDS = {"<event>", "job", "scheduled_time", "schedule_arn", "attempt", "execution_id", "trigger"}
MESSAGE_LIMIT = 400
PROPERTIES = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any JSON value, including the numbers JSON can spell but Python finds awkward (1e400 is inf).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.just(float("inf"))
    | st.text(max_size=40)
    | st.text(min_size=300, max_size=600),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=8,
)
offsets = st.builds(
    timezone, st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59))
)
# st.datetimes takes naive bounds and attaches the zones itself.
EARLIEST, LATEST = datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59)  # noqa: DTZ001
DAY_START, DAY_END = datetime(2026, 11, 29), datetime(2026, 11, 30)  # noqa: DTZ001
instants = st.datetimes(min_value=EARLIEST, max_value=LATEST, timezones=offsets)
# Spellings of times near the edges the parser must hold: any year, any offset, seconds or not.
time_texts = st.one_of(
    instants.map(lambda moment: moment.isoformat()),
    instants.map(lambda moment: moment.replace(second=0, microsecond=0).isoformat()),
    st.datetimes(min_value=DAY_START, max_value=DAY_END, timezones=offsets).map(
        lambda moment: moment.replace(second=0, microsecond=0).isoformat()
    ),
    st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:00-01:00", "2026-11-29T09:00:00+00:00:30"]),
    st.text(max_size=80),
)
field_values = {
    "job": st.one_of(st.just(JOB), json_values),
    "scheduled_time": st.one_of(time_texts, json_values),
    "schedule_arn": st.one_of(st.just("arn:aws:scheduler:us-east-1:1:schedule/default/x"), json_values),
    "attempt": st.one_of(st.integers(-5, MAX_ATTEMPT + 5).map(str), st.integers(), json_values),
    "execution_id": st.one_of(st.uuids().map(str), st.text(min_size=MAX_ID_LENGTH, max_size=MAX_ID_LENGTH + 2)),
    "trigger": st.one_of(st.sampled_from([t.value for t in Trigger]), json_values),
}
events = st.one_of(
    json_values,
    st.fixed_dictionaries({}, optional=field_values),
    st.fixed_dictionaries(
        {"job": st.just(JOB), "scheduled_time": time_texts},
        optional={k: v for k, v in field_values.items() if k not in ("job", "scheduled_time")},
    ),
)


def _outcome[T, E: Exception](parse: Callable[[], T], refusal: type[E]) -> T | E:
    """What parsing answered: its result, or the refusal it raised (anything else propagates)."""
    try:
        return parse()
    except refusal as error:
        return error


def _assert_valid(tick: Tick) -> None:
    utc = tick.scheduled_time.astimezone(UTC)
    assert 1000 <= utc.year <= 9999
    assert utc.second == utc.microsecond == 0
    assert tick.scheduled_time <= NOW + FUTURE_TICK_ALLOWANCE
    assert 1 <= tick.attempt <= MAX_ATTEMPT
    for value in (tick.job, tick.schedule_arn, tick.execution_id):
        assert value is None or 0 < len(value) <= MAX_ID_LENGTH
    # Round trip: the payload a tick writes is the tick again, spelled with a four-digit year.
    payload = tick.to_event()
    assert len(payload["scheduled_time"]) == len("2026-11-29T09:00:00Z")
    assert Tick.from_event(json.loads(json.dumps(payload)), expected_job=JOB, now=NOW) == tick


@PROPERTIES
@given(events)
@example({"job": JOB, "scheduled_time": "0002-01-01T01:00:00Z"})
@example({"job": JOB, "scheduled_time": "2026-11-29T09:00:00Z", "attempt": float("inf")})
@example({"job": JOB, "scheduled_time": "2026-11-29T09:00:00Z", "execution_id": "e" * 450_000})
def test_any_event_is_a_valid_tick_or_an_error_naming_a_field(event: Any) -> None:
    outcome = _outcome(lambda: Tick.from_event(event, expected_job=JOB, now=NOW), MalformedTickError)

    if isinstance(outcome, MalformedTickError):
        assert outcome.field in TICK_FIELDS
        assert len(str(outcome)) < MESSAGE_LIMIT
    else:
        _assert_valid(outcome)


@PROPERTIES
@given(st.text(max_size=200))
def test_any_json_text_is_a_valid_tick_or_an_error_naming_a_field(text: str) -> None:
    try:
        event = json.loads(text)
    except ValueError:
        return
    outcome = _outcome(lambda: Tick.from_event(event, expected_job=JOB, now=NOW), MalformedTickError)

    if isinstance(outcome, MalformedTickError):
        assert outcome.field in TICK_FIELDS
    else:
        _assert_valid(outcome)


@PROPERTIES
@given(instants)
def test_a_time_parses_to_its_instant_on_a_whole_minute_or_is_refused(moment: datetime) -> None:
    parsed = _outcome(lambda: parse_tick_time(moment.isoformat()), MalformedTickError)

    if isinstance(parsed, MalformedTickError):
        assert parsed.field == "scheduled_time"
    else:
        assert parsed == moment
        assert parsed.second == parsed.microsecond == 0
        assert 1000 <= parsed.year <= 9999
        assert parse_tick_time(format_scheduled_time(parsed)) == parsed


# ---------------------------------------------------------------------------------------------- the trigger
bodies = st.one_of(
    st.none(),
    st.text(max_size=200),
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {}, optional={"scheduled_time": st.one_of(time_texts, json_values), "off_schedule": json_values}
    ).map(json.dumps),
    st.dictionaries(st.text(max_size=300), json_values, max_size=3).map(json.dumps),
)


@PROPERTIES
@given(bodies)
@example('{"scheduled_time": "2026-11-29T09:10:00+00:00:30"}')
@example('{"scheduled_time": "' + "9" * 4000 + '"}')
def test_any_body_names_a_due_minute_in_the_window_or_is_a_400_naming_a_field(body: str | None) -> None:
    asked = _outcome(lambda: tick_body(body, now=NOW, window=WINDOW), BadTickRequest)
    scheduled = asked if isinstance(asked, BadTickRequest) else asked.scheduled_time

    if isinstance(scheduled, BadTickRequest):
        assert scheduled.status_code == 400
        keys = (
            {echo(key) for key in json.loads(body or "{}")} if scheduled.field not in ("<body>", *BODY_FIELDS) else ()
        )
        assert scheduled.field in {"<body>", *BODY_FIELDS, *keys}
        assert len(scheduled.body()["message"]) < MESSAGE_LIMIT
    elif scheduled is not None:  # None: no time named, the schedule's latest tick (the trigger logic tests')
        assert scheduled.second == scheduled.microsecond == 0
        assert NOW - WINDOW <= scheduled <= NOW + FUTURE_TICK_ALLOWANCE


@PROPERTIES
@given(bodies, st.sampled_from(["text", "base64", "not-base64"]))
def test_what_the_trigger_hands_a_job_is_a_tick_the_job_accepts(body: str | None, encoding: str) -> None:
    # API Gateway base64-encodes bodies it does not take for text; a caller may also lie about it.
    raw, encoded = body, encoding != "text"
    if encoding == "base64" and body is not None:
        raw = base64.b64encode(body.encode("utf-8", "surrogatepass")).decode()
    invoker = FakeInvoker()
    response = _outcome(
        lambda: trigger_tick(
            TickRequest(
                job=JOB, presented_secret=CURRENT, body=raw, body_base64_encoded=encoded, request_id="r", now=NOW
            ),
            secret=FakeSecret({"current": CURRENT, "previous": ""}),
            job_functions=JOBS,
            job_schedules=EVERY_MINUTE,
            window=WINDOW,
            ledger=FakeLedger(),
            invoker=invoker,
        ),
        BadTickRequest,
    )

    if isinstance(response, BadTickRequest):
        named = {"<body>", *BODY_FIELDS}
        if response.field not in named:  # an unknown key of the object, quoted by its prefix
            named |= {echo(key) for key in json.loads(body or "{}")}
        assert response.field in named
        assert invoker.calls == []
        return
    [(_, payload)] = invoker.calls
    assert response.status_code == 202
    _assert_valid(Tick.from_event(payload, expected_job=JOB, now=NOW))
