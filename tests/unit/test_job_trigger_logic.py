"""The trigger's decisions, with an in-memory secret, ledger and invoker: who may press, which
tick a request names, and whether it runs."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from clockless.ledger import STATUS_FAILED, STATUS_STARTED, STATUS_SUCCEEDED, LedgerEntry
from clockless.pause import Pause
from clockless.schedule.expressions import ScheduleSpec
from clockless.tick import Tick, Trigger
from job_trigger.logic import (
    MAX_BODY_LENGTH,
    BadTickRequest,
    NotATick,
    TickBody,
    TickRequest,
    TriggerRejected,
    Unauthorized,
    UnknownJob,
    request_body,
    tick_body,
    trigger_tick,
)
from job_trigger.secret import MAX_SECRET_LENGTH, TriggerSecret, TriggerSecretError
from job_trigger.settings import JobTriggerSettings

CURRENT = "c" * 48
PREVIOUS = "p" * 48
NOW = datetime(2026, 11, 29, 14, 7, 31, 250000, tzinfo=UTC)
WINDOW = timedelta(minutes=15)
JOBS = {
    "nightly-report": "arn:aws:lambda:us-east-1:123456789012:function:wg",
    "hourly-sweep": "arn:aws:lambda:us-east-1:123456789012:function:sc",
}
# Their schedules, as the template's JOB_SCHEDULES gives them: both ticked at 14:00, 7.5 min before NOW.
SCHEDULE_PROPERTIES = {
    "nightly-report": {"ScheduleExpression": "cron(0 14 * * ? *)", "ScheduleExpressionTimezone": "UTC"},
    "hourly-sweep": {"ScheduleExpression": "cron(0 * * * ? *)", "ScheduleExpressionTimezone": "UTC"},
}
SCHEDULES = {job: ScheduleSpec.from_properties(properties) for job, properties in SCHEDULE_PROPERTIES.items()}
TICK = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)


@dataclass
class FakeSecret:
    value: Mapping[str, Any]
    loads: int = 0

    def load(self) -> TriggerSecret:
        self.loads += 1
        return TriggerSecret.from_value(self.value)


@dataclass
class FakeLedger:
    entries: dict[tuple[str, datetime], LedgerEntry] = field(default_factory=dict)
    reads: list[tuple[str, datetime]] = field(default_factory=list)
    pauses: dict[str, Pause] = field(default_factory=dict)
    overrides: list[tuple[str, datetime, str]] = field(default_factory=list)

    def entry(self, job: str, scheduled_time: datetime) -> LedgerEntry | None:
        self.reads.append((job, scheduled_time))
        return self.entries.get((job, scheduled_time))

    def pause(self, job: str) -> Pause | None:
        return self.pauses.get(job)

    def record_override(self, job: str, scheduled_time: datetime, *, by: str, pause: Pause, now: datetime) -> None:
        self.overrides.append((job, scheduled_time, by))

    def record(self, job: str, scheduled_time: datetime, status: str, summary: Mapping[str, Any] | None = None) -> None:
        self.entries[(job, scheduled_time)] = LedgerEntry(
            job=job,
            scheduled_time=scheduled_time,
            status=status,
            attempts=1,
            trigger="schedule",
            started_at="2026-11-29T14:00:01Z",
            finished_at="2026-11-29T14:00:02Z" if status == STATUS_SUCCEEDED else None,
            duration_ms=900,
            summary=summary,
            error=None,
        )


@dataclass
class FakeInvoker:
    calls: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def invoke_async(self, function_arn: str, payload: Mapping[str, str]) -> None:
        self.calls.append((function_arn, dict(payload)))


def press(
    job: str = "nightly-report",
    *,
    secret: str | None = CURRENT,
    body: str | None = None,
    base64_encoded: bool = False,
    stored: Mapping[str, Any] | None = None,
    ledger: FakeLedger | None = None,
    invoker: FakeInvoker | None = None,
    now: datetime = NOW,
) -> Any:
    return trigger_tick(
        TickRequest(
            job=job,
            presented_secret=secret,
            body=body,
            body_base64_encoded=base64_encoded,
            request_id="req-1",
            now=now,
        ),
        secret=FakeSecret(stored or {"current": CURRENT, "previous": ""}),
        job_functions=JOBS,
        job_schedules=SCHEDULES,
        window=WINDOW,
        ledger=ledger if ledger is not None else FakeLedger(),
        invoker=invoker if invoker is not None else FakeInvoker(),
    )


# ---------------------------------------------------------------------------------------------- the secret
@pytest.mark.parametrize(
    "presented",
    [
        pytest.param(None, id="missing"),
        pytest.param("", id="empty"),
        pytest.param("c" * 47 + "d", id="wrong-last-character"),
        pytest.param(CURRENT[:-1], id="prefix"),
        pytest.param(CURRENT + "c", id="one-too-many"),
        pytest.param(CURRENT + " " * (MAX_SECRET_LENGTH + 1 - len(CURRENT)), id="too-long"),
        pytest.param("c" * 47 + "é", id="non-ascii"),
        pytest.param(CURRENT.upper(), id="other-case"),
    ],
)
def test_a_secret_that_is_not_exactly_an_accepted_value_is_refused(presented: str | None) -> None:
    # Given the stored secret with only a current value
    secret = TriggerSecret.from_value({"current": CURRENT, "previous": ""})

    # When / Then
    assert secret.accepts(presented) is False


def test_current_and_previous_are_both_accepted_during_a_rotation() -> None:
    # Given a secret mid-rotation
    secret = TriggerSecret.from_value({"current": CURRENT, "previous": PREVIOUS})

    # Then both values open the door, and nothing else does
    assert secret.accepts(CURRENT)
    assert secret.accepts(PREVIOUS)
    assert not secret.accepts("x" * 48)


def test_an_empty_previous_value_accepts_nothing() -> None:
    secret = TriggerSecret.from_value({"current": CURRENT, "previous": ""})

    assert not secret.accepts("")
    assert secret.previous_digest is None


def test_the_secret_keeps_no_value_and_prints_none() -> None:
    # Given a loaded secret
    secret = TriggerSecret.from_value({"current": CURRENT, "previous": PREVIOUS})

    # Then neither value is in what it holds or prints
    assert CURRENT not in repr(secret)
    assert PREVIOUS not in repr(secret)
    assert CURRENT.encode() not in secret.current_digest


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ("not-json-object", "JSON object"),
        ({"previous": ""}, '"current"'),
        ({"current": ""}, '"current"'),
        ({"current": "sécret-value"}, '"current"'),
        ({"current": CURRENT, "previous": 42}, '"previous"'),
    ],
)
def test_a_malformed_stored_secret_is_a_configuration_error_that_shows_no_value(stored: Any, named: str) -> None:
    with pytest.raises(TriggerSecretError) as raised:
        TriggerSecret.from_value(stored)

    assert named in str(raised.value)
    assert "sécret-value" not in str(raised.value)


# ---------------------------------------------------------------------------------------------- the body
@pytest.mark.parametrize("body", [None, "", "   ", "{}", '{"scheduled_time": null}', '{"off_schedule": false}'])
def test_a_body_without_a_time_names_none_and_asks_for_no_off_schedule_run(body: str | None) -> None:
    assert tick_body(body, now=NOW, window=WINDOW) == TickBody(scheduled_time=None, off_schedule=False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-29T14:00:00Z", datetime(2026, 11, 29, 14, 0, tzinfo=UTC)),
        ("2026-11-29T09:00:00-05:00", datetime(2026, 11, 29, 14, 0, tzinfo=UTC)),
        ("2026-11-29T14:06:00+00:00", datetime(2026, 11, 29, 14, 6, tzinfo=UTC)),
    ],
)
def test_an_explicit_time_is_read_in_utc(text: str, expected: datetime) -> None:
    assert tick_body(json.dumps({"scheduled_time": text}), now=NOW, window=WINDOW).scheduled_time == expected


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ("scheduled_time=now", "<body>", "is not JSON"),
        ('["2026-11-29T14:00:00Z"]', "<body>", "must be a JSON object, got an array"),
        ('"2026-11-29T14:00:00Z"', "<body>", "must be a JSON object, got '2026-11-29T14:00:00Z'"),
        ('{"scheduled_time": "2026-11-29T14:00:00Z", "job": "x"}', "job", "is not accepted"),
        ('{"off_schedule": "yes"}', "off_schedule", "must be true or false, got 'yes'"),
        ('{"off_schedule": 1}', "off_schedule", "must be true or false, got the integer 1"),
        ('{"scheduled_time": 1795960800}', "scheduled_time", "must be a string"),
        ('{"scheduled_time": "yesterday"}', "scheduled_time", "is not an ISO-8601 time"),
        ('{"scheduled_time": "2026-11-29T14:00:00"}', "scheduled_time", "has no time zone"),
        ('{"scheduled_time": "2026-11-29T14:00:30Z"}', "scheduled_time", "must be a whole minute"),
        ('{"scheduled_time": "2026-11-29T14:00:00.5Z"}', "scheduled_time", "must be a whole minute"),
        ('{"scheduled_time": "2026-11-29T13:52:00Z"}', "scheduled_time", "more than 15 minutes before now"),
        ('{"scheduled_time": "2026-11-29T14:08:00Z"}', "scheduled_time", "is 28.75 s in the future"),
        ('{"scheduled_time": "2026-11-29T14:23:00Z"}', "scheduled_time", "is 15 min in the future"),
        ('{"scheduled_time": "2020-01-01T14:00:00Z"}', "scheduled_time", "clockless backfill"),
        ("{" + " " * MAX_BODY_LENGTH + "}", "<body>", "is longer than"),
    ],
)
def test_a_bad_body_is_refused_naming_the_field(body: str, field: str, says: str) -> None:
    with pytest.raises(BadTickRequest) as raised:
        tick_body(body, now=NOW, window=WINDOW)

    assert raised.value.field == field
    assert says in str(raised.value)
    assert raised.value.body() == {"error": "bad_request", "field": field, "message": str(raised.value)}


def test_the_window_reaches_back_and_not_ahead() -> None:
    earliest = json.dumps({"scheduled_time": "2026-11-29T13:53:00Z"})  # 14:31 before now
    latest = json.dumps({"scheduled_time": "2026-11-29T14:07:00Z"})  # the current minute

    assert tick_body(earliest, now=NOW, window=WINDOW).scheduled_time == datetime(2026, 11, 29, 13, 53, tzinfo=UTC)
    assert tick_body(latest, now=NOW, window=WINDOW).scheduled_time == datetime(2026, 11, 29, 14, 7, tzinfo=UTC)


def test_a_base64_body_is_decoded_and_a_broken_one_refused() -> None:
    encoded = base64.b64encode(b'{"scheduled_time": "2026-11-29T14:00:00Z"}').decode()

    assert request_body(encoded, base64_encoded=True) == '{"scheduled_time": "2026-11-29T14:00:00Z"}'
    assert request_body("{}", base64_encoded=False) == "{}"
    for broken in ("not base64!", "\u00e9t\u00e9", base64.b64encode(b"\xff\xfe").decode()):
        with pytest.raises(BadTickRequest) as raised:
            request_body(broken, base64_encoded=True)
        assert raised.value.field == "<body>"


def test_an_unknown_field_of_any_length_is_named_by_a_prefix() -> None:
    body = json.dumps({"k" * 3000: 1})

    with pytest.raises(BadTickRequest) as raised:
        tick_body(body, now=NOW, window=WINDOW)

    assert raised.value.field.startswith("kkkk")
    assert len(json.dumps(raised.value.body())) < 400


@pytest.mark.parametrize("body", ["[" * 2000 + "]" * 2000, '{"scheduled_time": ' + "[" * 2000 + "]" * 2000 + "}"])
def test_a_deeply_nested_body_is_a_400_not_a_crash(body: str) -> None:
    with pytest.raises(BadTickRequest) as raised:
        tick_body(body, now=NOW, window=WINDOW)

    assert raised.value.field in ("<body>", "scheduled_time")


# ---------------------------------------------------------------------------------------------- a press
def test_a_fresh_tick_is_handed_to_its_jobs_function_with_the_schedulers_payload() -> None:
    # Given an empty ledger
    ledger, invoker = FakeLedger(), FakeInvoker()

    # When the button is pressed for window generation
    response = press(ledger=ledger, invoker=invoker)

    # Then the job's function gets one tick that the job's own parser accepts, triggered over HTTP
    assert response.status_code == 202
    [(arn, payload)] = invoker.calls
    assert arn == JOBS["nightly-report"]
    tick = Tick.from_event(payload, expected_job="nightly-report")
    assert tick.scheduled_time == TICK  # the schedule's latest tick: no time was named
    assert tick.trigger is Trigger.HTTP
    assert tick.attempt == 1
    assert tick.execution_id == "req-1"
    assert response.body["ledger_key"] == {"job": "nightly-report", "scheduled_time": "2026-11-29T14:00:00Z"}
    assert response.body["status"] == "accepted"
    assert response.body["tick"] == payload


def test_a_tick_that_already_succeeded_answers_its_outcome_and_runs_nothing() -> None:
    # Given the ledger says the tick succeeded
    ledger, invoker = FakeLedger(), FakeInvoker()
    ledger.record("hourly-sweep", datetime(2026, 11, 29, 14, 0, tzinfo=UTC), STATUS_SUCCEEDED, {"deleted": 3})

    # When it is pressed again
    response = press("hourly-sweep", body='{"scheduled_time": "2026-11-29T14:00:00Z"}', ledger=ledger, invoker=invoker)

    # Then the recorded outcome comes back and nothing is invoked
    assert response.status_code == 200
    assert invoker.calls == []
    assert response.body["status"] == STATUS_SUCCEEDED
    assert response.body["summary"] == {"deleted": 3}
    assert response.body["invoked"] is False


@pytest.mark.parametrize("status", [STATUS_STARTED, STATUS_FAILED, "skipped"])
def test_a_tick_that_did_not_succeed_is_delivered_again(status: str) -> None:
    # Given the ledger holds the tick without success (a delivery still running, or stuck, or failed)
    ledger, invoker = FakeLedger(), FakeInvoker()
    ledger.record("nightly-report", TICK, status)

    # When it is pressed
    response = press(ledger=ledger, invoker=invoker)

    # Then it is delivered again: the job's idempotency decides whether it runs
    assert response.status_code == 202
    assert len(invoker.calls) == 1
    assert response.body["previous_status"] == status
    assert ("note" in response.body) is (status == STATUS_STARTED)


@pytest.mark.parametrize("presented", [None, "", "wrong", "x" * 1000, "ünïcode"])
def test_a_refused_secret_reads_nothing_and_invokes_nothing_even_for_a_bad_request(presented: str | None) -> None:
    # Given a request that is also wrong in every other way
    ledger, invoker = FakeLedger(), FakeInvoker()

    # When it is pressed without the right secret
    with pytest.raises(Unauthorized) as raised:
        press("no-such-job", secret=presented, body="not json", ledger=ledger, invoker=invoker)

    # Then only 401 comes back, with the same body every time
    assert raised.value.status_code == 401
    assert raised.value.body() == {"message": "Unauthorized"}
    assert ledger.reads == []
    assert invoker.calls == []


def test_an_unknown_job_is_404_naming_the_known_ones() -> None:
    ledger, invoker = FakeLedger(), FakeInvoker()

    with pytest.raises(UnknownJob) as raised:
        press("no-such-job", ledger=ledger, invoker=invoker)

    assert raised.value.status_code == 404
    assert raised.value.body()["field"] == "job"
    assert "hourly-sweep, nightly-report" in str(raised.value)
    assert ledger.reads == []
    assert invoker.calls == []


def test_a_bad_body_changes_nothing() -> None:
    ledger, invoker = FakeLedger(), FakeInvoker()

    with pytest.raises(BadTickRequest):
        press(body='{"scheduled_time": "2020-01-01T00:00:00Z"}', ledger=ledger, invoker=invoker)

    assert ledger.reads == []
    assert invoker.calls == []


# ---------------------------------------------------------------------------------------------- the schedule
def test_an_instant_that_is_not_a_tick_is_refused_naming_the_scheduled_times_around_it() -> None:
    # Given an hourly job and a press for 14:05, inside the window but between its ticks
    ledger, invoker = FakeLedger(), FakeInvoker()

    # When it is pressed without asking for an off-schedule run
    with pytest.raises(NotATick) as raised:
        press("hourly-sweep", body='{"scheduled_time": "2026-11-29T14:05:00Z"}', ledger=ledger, invoker=invoker)

    # Then 400 with the scheduled times before and after it, in the message and as fields
    assert raised.value.status_code == 400
    body = raised.value.body()
    assert body["error"] == "not_a_tick"
    assert body["field"] == "scheduled_time"
    assert (body["scheduled_before"], body["scheduled_after"]) == ("2026-11-29T14:00:00Z", "2026-11-29T15:00:00Z")
    assert body["message"] == (
        "field 'scheduled_time' 2026-11-29T14:05:00Z is not a tick of hourly-sweep's schedule cron(0 * * * ? *) "
        "(scheduled times: before it 2026-11-29T14:00:00Z, after it 2026-11-29T15:00:00Z); name one of them, or "
        'send "off_schedule": true to run at this instant anyway (recorded with trigger off-schedule)'
    )
    # And nothing was read or invoked
    assert ledger.reads == []
    assert invoker.calls == []


def test_an_explicit_off_schedule_request_runs_the_instant_recorded_as_off_schedule() -> None:
    ledger, invoker = FakeLedger(), FakeInvoker()

    response = press(
        "hourly-sweep",
        body='{"scheduled_time": "2026-11-29T14:05:00Z", "off_schedule": true}',
        ledger=ledger,
        invoker=invoker,
    )

    assert response.status_code == 202
    [(_, payload)] = invoker.calls
    tick = Tick.from_event(payload, expected_job="hourly-sweep")
    assert tick.scheduled_time == datetime(2026, 11, 29, 14, 5, tzinfo=UTC)
    assert tick.trigger is Trigger.OFF_SCHEDULE
    assert ledger.reads == [("hourly-sweep", datetime(2026, 11, 29, 14, 5, tzinfo=UTC))]


def test_off_schedule_without_a_time_runs_the_current_minute() -> None:
    invoker = FakeInvoker()

    response = press("hourly-sweep", body='{"off_schedule": true}', invoker=invoker)

    assert response.body["scheduled_time"] == "2026-11-29T14:07:00Z"
    assert response.body["tick"]["trigger"] == "off-schedule"


def test_off_schedule_on_a_scheduled_time_is_an_ordinary_http_tick() -> None:
    # Asking for an off-schedule run of an instant that is a tick runs that tick as any press does.
    response = press("hourly-sweep", body='{"scheduled_time": "2026-11-29T14:00:00Z", "off_schedule": true}')

    assert response.body["tick"]["trigger"] == "http"


def test_without_a_time_a_caller_a_little_ahead_of_the_clock_gets_the_tick_it_means() -> None:
    # Given a press 3 s before 15:00 (a caller's clock within the kit's clock-skew allowance)
    invoker = FakeInvoker()

    response = press("hourly-sweep", invoker=invoker, now=datetime(2026, 11, 29, 14, 59, 57, tzinfo=UTC))

    # Then it names the 15:00 tick, not 14:00's
    assert response.body["scheduled_time"] == "2026-11-29T15:00:00Z"


def test_without_a_time_a_latest_tick_older_than_the_window_is_refused() -> None:
    # Given the daily job 2 h after its tick
    ledger, invoker = FakeLedger(), FakeInvoker()

    with pytest.raises(BadTickRequest) as raised:
        press(ledger=ledger, invoker=invoker, now=datetime(2026, 11, 29, 16, 0, 10, tzinfo=UTC))

    assert raised.value.field == "scheduled_time"
    assert "was not sent, and nightly-report's latest tick 2026-11-29T14:00:00Z is more than 15 minutes" in str(
        raised.value
    )
    assert "clockless backfill" in str(raised.value)
    assert ledger.reads == []
    assert invoker.calls == []


# ---------------------------------------------------------------------------------------------- settings
def test_settings_read_the_templates_variables() -> None:
    settings = JobTriggerSettings.from_env(
        {
            "JOB_FUNCTIONS": json.dumps(JOBS),
            "JOB_SCHEDULES": json.dumps(SCHEDULE_PROPERTIES),
            "LEDGER_TABLE_NAME": "ledger",
            "IDEMPOTENCY_TABLE_NAME": "idempotency",
            "TRIGGER_SECRET_ID": "arn:aws:secretsmanager:us-east-1:123456789012:secret:trigger",
            "TRIGGER_SECRET_MAX_AGE_SECONDS": "300",
            "TRIGGER_WINDOW_MINUTES": "15",
        }
    )

    assert settings.job_functions == JOBS
    assert settings.job_schedules == SCHEDULES
    assert settings.requests_table == "idempotency"
    assert settings.window == timedelta(minutes=15)
    assert settings.secret_max_age_seconds == 300


@pytest.mark.parametrize(
    ("job_functions", "says"),
    [
        ("{not json", "is not JSON"),
        ("[]", "must be a JSON object"),
        ('{"nightly-report": "wg"}', "not an ARN"),
    ],
)
def test_a_bad_job_map_is_a_configuration_error_naming_the_variable(job_functions: str, says: str) -> None:
    from clockless.config import ConfigurationError

    with pytest.raises(ConfigurationError, match="JOB_FUNCTIONS") as raised:
        JobTriggerSettings.from_env(
            {
                "JOB_FUNCTIONS": job_functions,
                "JOB_SCHEDULES": json.dumps(SCHEDULE_PROPERTIES),
                "LEDGER_TABLE_NAME": "ledger",
                "TRIGGER_SECRET_ID": "trigger",
                "TRIGGER_SECRET_MAX_AGE_SECONDS": "300",
                "TRIGGER_WINDOW_MINUTES": "15",
            }
        )
    assert says in str(raised.value)


@pytest.mark.parametrize(
    ("job_schedules", "says"),
    [
        ("{not json", "JOB_SCHEDULES is not JSON"),
        ("[]", "must be a JSON object"),
        (json.dumps({"nightly-report": SCHEDULE_PROPERTIES["nightly-report"]}), "missing ['hourly-sweep']"),
        (json.dumps({**SCHEDULE_PROPERTIES, "other": {}}), "not a job ['other']"),
        (
            json.dumps({**SCHEDULE_PROPERTIES, "hourly-sweep": {"ScheduleExpression": "cron(0 * * * *)"}}),
            "job 'hourly-sweep': cron(0 * * * *) has five fields",
        ),
        (
            json.dumps({**SCHEDULE_PROPERTIES, "hourly-sweep": {"ScheduleExpression": "rate(1 hour)"}}),
            "rate(1 hour) has no StartDate",
        ),
        (
            json.dumps({**SCHEDULE_PROPERTIES, "hourly-sweep": {"Schedule": "cron(0 * * * ? *)", "State": "x"}}),
            "must be an object of ScheduleExpression",
        ),
    ],
)
def test_bad_job_schedules_are_a_configuration_error_naming_the_variable(job_schedules: str, says: str) -> None:
    from clockless.config import ConfigurationError

    with pytest.raises(ConfigurationError, match="JOB_SCHEDULES") as raised:
        JobTriggerSettings.from_env(
            {
                "JOB_FUNCTIONS": json.dumps(JOBS),
                "JOB_SCHEDULES": job_schedules,
                "LEDGER_TABLE_NAME": "ledger",
                "IDEMPOTENCY_TABLE_NAME": "idempotency",
                "TRIGGER_SECRET_ID": "trigger",
                "TRIGGER_SECRET_MAX_AGE_SECONDS": "300",
                "TRIGGER_WINDOW_MINUTES": "15",
            }
        )
    assert says in str(raised.value)


# ---------------------------------------------------------------------------------------------- a pause
VENDOR_DOWN = Pause(since="2026-11-29T13:00:00Z", by="ops@laptop", reason="vendor API down")


def test_a_paused_job_is_refused_with_409_naming_the_pause_and_nothing_is_invoked() -> None:
    # Given the job paused by an operator
    ledger, invoker = FakeLedger(pauses={"nightly-report": VENDOR_DOWN}), FakeInvoker()

    # When the trigger is pressed without an override
    with pytest.raises(TriggerRejected) as refused:
        press(ledger=ledger, invoker=invoker)

    # Then 409, one sentence naming the pause, its reason and who set it; nothing invoked or recorded
    assert refused.value.status_code == 409
    body = refused.value.body()
    assert body["error"] == "paused"
    assert body["paused"] == {"since": "2026-11-29T13:00:00Z", "by": "ops@laptop", "reason": "vendor API down"}
    assert body["message"].startswith(
        "nightly-report is paused (since 2026-11-29T13:00:00Z by ops@laptop: vendor API down): not run"
    )
    assert '"override_pause": true' in body["message"]
    assert (invoker.calls, ledger.overrides) == ([], [])


def test_an_override_runs_a_paused_job_and_is_recorded_in_the_ledger() -> None:
    ledger, invoker = FakeLedger(pauses={"nightly-report": VENDOR_DOWN}), FakeInvoker()

    response = press(body=json.dumps({"override_pause": True}), ledger=ledger, invoker=invoker)

    assert response.status_code == 202
    assert response.body["pause_overridden"]["reason"] == "vendor API down"
    assert len(invoker.calls) == 1
    assert ledger.overrides == [("nightly-report", TICK, "http trigger (request req-1)")]


def test_an_override_of_a_job_not_paused_changes_nothing() -> None:
    ledger, invoker = FakeLedger(), FakeInvoker()

    response = press(body=json.dumps({"override_pause": True}), ledger=ledger, invoker=invoker)

    assert response.status_code == 202
    assert "pause_overridden" not in response.body
    assert ledger.overrides == []


def test_an_override_that_is_not_a_boolean_is_refused() -> None:
    with pytest.raises(BadTickRequest, match="field 'override_pause' must be true or false"):
        press(body=json.dumps({"override_pause": "yes"}))
