"""The HTTP trigger end to end: API Gateway v2 events through the real handler with the template's
environment, against moto's server (Secrets Manager, DynamoDB from template.yaml, Lambda)."""

from __future__ import annotations

import copy
import io
import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from clockless.ledger import RunLedger
from clockless.pause import CURRENT_STATE, PAUSED, STATE_PREFIX, state_item
from clockless.tick import Tick
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.services import LOCAL_SECRET_VALUE, accept_lambda_invokes, create_secrets, secrets_client
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.model import Template
from tests.conftest import EVENTS, load_event
from tests.integration.conftest import drain_workers
from tests.jobs import HOUR, job_where, jobs

FUNCTION = "JobTriggerFunction"
# The job the button presses: the template's first hourly one.
JOB = job_where(period=HOUR).name
JOB_FUNCTION = job_where(period=HOUR).function_id
NOW = datetime(2026, 11, 29, 14, 7, 31, tzinfo=UTC)
UNAUTHORIZED = {"message": "Unauthorized"}
# What each sample in events/job_trigger/ must answer; a new sample needs its line here.
SAMPLE_STATUS = {
    "now.json": 202,
    "now-no-body.json": 202,
    "missing-secret.json": 401,
    "wrong-secret.json": 401,
    "unknown-job.json": 404,
    "not-json.json": 400,
    "bad-time.json": 400,
    "stale-time.json": 400,
    "future-time.json": 400,
    "unknown-field.json": 400,
    "not-a-tick.json": 400,
    "off-schedule.json": 202,
}


@dataclass
class Invocation:
    function_name: str
    invocation_type: str
    payload: dict[str, Any]
    status_code: int | None = None


@dataclass
class TriggerApi:
    """Presses the button through the handler and records what reached Lambda and the ledger."""

    runtime: LocalLambdaRuntime
    template: Template
    secret_name: str
    invocations: list[Invocation] = field(default_factory=list)
    ledger_reads: int = 0

    def press(
        self,
        job: str = JOB,
        *,
        body: str | None = "{}",
        secret: str | None = LOCAL_SECRET_VALUE,
        headers: dict[str, str] | None = None,
        request_id: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """One request, with a request id of its own (as API Gateway gives each) unless `request_id`."""
        event = copy.deepcopy(load_event("job_trigger/now.json"))
        event["requestContext"]["requestId"] = request_id or f"req-{uuid.uuid4().hex[:16]}"
        event["rawPath"] = event["requestContext"]["http"]["path"] = f"/jobs/{job}/ticks"
        event["pathParameters"] = {"job": job}
        event["body"] = body
        if secret is None:
            del event["headers"]["x-clockless-secret"]
        else:
            event["headers"]["x-clockless-secret"] = secret
        event["headers"].update(headers or {})
        return self.send(event)

    def send(self, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = self.runtime.call(FUNCTION, event)
        return response["statusCode"], json.loads(response["body"])

    def function_arn(self, logical_id: str) -> str:
        return str(resolve({"Fn::GetAtt": [logical_id, "Arn"]}, self.template, LocalNames()))

    def store_secret(self, value: dict[str, str]) -> None:
        secrets_client(self.runtime.endpoint).put_secret_value(
            SecretId=self.secret_name, SecretString=json.dumps(value)
        )


@pytest.fixture
def api(runtime: LocalLambdaRuntime, template: Template, tables: Any) -> Iterator[TriggerApi]:
    """The trigger with a fresh execution environment (cold start: no cached secret or clients)."""
    [secret_name] = create_secrets(template, runtime.endpoint)
    accept_lambda_invokes(runtime.endpoint)
    with runtime.function_environment(FUNCTION):
        from job_trigger import handler

        handler.dependencies.cache_clear()
        deps = handler.dependencies()
        api = TriggerApi(runtime, template, secret_name)

        def record_request(params: dict[str, Any], **_: Any) -> None:
            api.invocations.append(
                Invocation(params["FunctionName"], params["InvocationType"], json.loads(params["Payload"]))
            )

        def record_status(parsed: dict[str, Any], **_: Any) -> None:
            api.invocations[-1].status_code = parsed.get("StatusCode")

        def count_read(**_: Any) -> None:
            api.ledger_reads += 1

        deps.invoker.client.meta.events.register("provide-client-params.lambda.Invoke", record_request)
        deps.invoker.client.meta.events.register("after-call.lambda.Invoke", record_status)
        deps.ledger.client.meta.events.register("provide-client-params.dynamodb.GetItem", count_read)
        yield api
        handler.dependencies.cache_clear()


def at(moment: datetime) -> Any:
    return time_machine.travel(moment, tick=False)


# ---------------------------------------------------------------------------------------------- 202
def test_a_press_hands_the_job_an_async_tick_shaped_like_the_schedulers(api: TriggerApi) -> None:
    # Given no delivery of the hourly job's 14:00 tick yet, at 14:07
    with at(NOW):
        # When the button is pressed without a time
        status, body = api.press(JOB, body=None)

    # Then 202 for the schedule's latest tick, with its identity and ledger key
    assert status == 202
    assert body["job"] == JOB
    assert body["scheduled_time"] == "2026-11-29T14:00:00Z"
    assert body["ledger_key"] == {"job": JOB, "scheduled_time": "2026-11-29T14:00:00Z"}
    # And Lambda queued exactly one asynchronous invoke of that job's function
    [invocation] = api.invocations
    assert invocation.function_name == api.function_arn(JOB_FUNCTION)
    assert invocation.invocation_type == "Event"
    assert invocation.status_code == 202
    # With a payload the job's own parser accepts as that tick, triggered over HTTP
    tick = Tick.from_event(invocation.payload, expected_job=JOB)
    assert tick.identity == {"job": JOB, "scheduled_time": "2026-11-29T14:00:00Z"}
    assert tick.trigger.value == "http"
    assert invocation.payload == body["tick"]


def test_each_job_goes_to_its_own_function(api: TriggerApi) -> None:
    declared = jobs(api.template)
    # 14:00 is not a tick of every job a project may declare (a nightly one): routing is the point
    # here, so each press asks for an explicit off-schedule run, which every job accepts.
    with at(NOW):
        for job in declared:
            api.press(job.name, body='{"scheduled_time": "2026-11-29T14:00:00Z", "off_schedule": true}')

    assert [i.function_name for i in api.invocations] == [api.function_arn(job.function_id) for job in declared]
    assert [Tick.from_event(i.payload, expected_job=i.payload["job"]).job for i in api.invocations] == [
        job.name for job in declared
    ]


# ---------------------------------------------------------------------------------------------- 200
def test_a_tick_the_job_completed_answers_200_with_its_outcome_and_runs_nothing(
    api: TriggerApi, runtime: LocalLambdaRuntime
) -> None:
    # Given a press whose tick the job then ran, as Lambda would have from the queued invoke
    with at(NOW):
        first_status, _ = api.press(JOB)
        [queued] = api.invocations
        executed = runtime.invoke(JOB_FUNCTION, queued.payload)
        drain_workers(runtime)  # the tick's partitions, as the work queue's poller runs them

        # When the same tick is pressed again
        status, body = api.press(JOB)

    # Then the ledger's outcome comes back: the job's own summary, and nothing was invoked again
    assert first_status == 202
    assert executed["outcome"] == "executed"
    assert status == 200
    assert body["status"] == "succeeded"
    assert body["invoked"] is False
    # the whole tick's summary, which the last partition's worker wrote
    assert body["summary"]["partitions"] == executed["summary"]["fan_out"]["partitions"] == 16
    assert body["trigger"] == "http"
    assert len(api.invocations) == 1


def test_a_tick_recorded_as_failed_is_delivered_again(
    api: TriggerApi, runtime: LocalLambdaRuntime, tables: Any
) -> None:
    # Given the ledger says the 14:00 tick failed
    ledger = RunLedger("LedgerTable", tables, retention_seconds=86400)
    tick = Tick.from_event({"job": JOB, "scheduled_time": "2026-11-29T14:00:00Z"}, expected_job=JOB)
    tables.update_item(**ledger.started_update(tick, "claim-1", first=True))
    tables.update_item(**ledger.failed_update(tick, "claim-1", "RuntimeError: boom", duration_ms=5))

    # When it is pressed
    with at(NOW):
        status, body = api.press(JOB, body='{"scheduled_time": "2026-11-29T14:00:00Z"}')

    # Then it is delivered again
    assert status == 202
    assert body["previous_status"] == "failed"
    assert len(api.invocations) == 1


# ---------------------------------------------------------------------------------------------- 401
@pytest.mark.parametrize(
    "secret",
    [
        pytest.param(None, id="missing"),
        pytest.param("", id="empty"),
        pytest.param("clockless-local-trigger-secreT", id="wrong"),
        pytest.param(LOCAL_SECRET_VALUE + "x" * 300, id="too-long"),
        pytest.param("clockless-local-trigger-secrét", id="non-ascii"),
        pytest.param(f" {LOCAL_SECRET_VALUE}", id="padded"),
    ],
)
def test_a_caller_without_the_secret_gets_the_same_401_and_changes_nothing(api: TriggerApi, secret: str | None) -> None:
    with at(NOW):
        status, body = api.press(JOB, secret=secret)

    assert (status, body) == (401, UNAUTHORIZED)
    assert api.invocations == []
    assert api.ledger_reads == 0


def test_the_secret_in_another_header_does_not_count(api: TriggerApi) -> None:
    with at(NOW):
        status, body = api.press(secret=None, headers={"authorization": LOCAL_SECRET_VALUE})

    assert (status, body) == (401, UNAUTHORIZED)


def test_an_unauthenticated_caller_cannot_tell_an_unknown_job_or_a_bad_body(api: TriggerApi) -> None:
    with at(NOW):
        unknown_job = api.press("nightly-report", secret="guess")
        bad_body = api.press(JOB, secret="guess", body="{")

    assert unknown_job == bad_body == (401, UNAUTHORIZED)


def test_during_a_rotation_both_values_work_and_the_old_one_stops_once_removed(api: TriggerApi) -> None:
    # Given a rotation in progress: a new current value, the old one kept as previous
    api.store_secret({"current": "rotated-value-2", "previous": LOCAL_SECRET_VALUE})
    with at(NOW):
        # Then both values are accepted
        assert api.press(secret=LOCAL_SECRET_VALUE)[0] == 202
        assert api.press(secret="rotated-value-2")[0] == 202

    # When the old value is removed
    api.store_secret({"current": "rotated-value-2", "previous": ""})

    # Then a warm function accepts it until its cached copy expires (TRIGGER_SECRET_MAX_AGE_SECONDS)
    max_age = int(api.runtime.environment(FUNCTION)["TRIGGER_SECRET_MAX_AGE_SECONDS"])
    with at(NOW + timedelta(seconds=max_age - 1)):
        assert api.press(secret=LOCAL_SECRET_VALUE)[0] == 202
    # And refuses it after that, while the new value keeps working
    with at(NOW + timedelta(seconds=max_age + 1)):
        assert api.press(secret=LOCAL_SECRET_VALUE) == (401, UNAUTHORIZED)
        assert api.press(secret="rotated-value-2")[0] == 202


# ---------------------------------------------------------------------------------------------- 404, 400
def test_an_unknown_job_is_404(api: TriggerApi) -> None:
    with at(NOW):
        status, body = api.press("nightly-report")

    assert status == 404
    assert body["field"] == "job"
    assert "nightly-report" in body["message"]
    assert api.invocations == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("not json", "<body>"),
        ("[]", "<body>"),
        ('{"scheduled_time": "soon"}', "scheduled_time"),
        ('{"scheduled_time": "2026-11-29T14:07:10Z"}', "scheduled_time"),
        ('{"when": "2026-11-29T14:07:00Z"}', "when"),
    ],
)
def test_a_bad_body_is_400_naming_the_field(api: TriggerApi, body: str, field: str) -> None:
    with at(NOW):
        status, answer = api.press(body=body)

    assert status == 400
    assert answer["field"] == field
    assert f"field '{field}'" in answer["message"]
    assert api.invocations == []
    assert api.ledger_reads == 0


def test_an_instant_that_is_not_a_tick_is_400_naming_the_scheduled_times_around_it(api: TriggerApi) -> None:
    # Given 14:05, inside the window but between the hourly job's ticks (the 21:30 of issue 31)
    with at(NOW):
        status, body = api.press(JOB, body='{"scheduled_time": "2026-11-29T14:05:00Z"}')

    # Then it is refused with the ticks before and after it, and nothing is read or invoked
    assert status == 400
    assert body["error"] == "not_a_tick"
    assert (body["scheduled_before"], body["scheduled_after"]) == ("2026-11-29T14:00:00Z", "2026-11-29T15:00:00Z")
    assert "is not a tick of" in body["message"]
    assert '"off_schedule": true' in body["message"]
    assert api.invocations == []
    assert api.ledger_reads == 0


def test_an_explicit_off_schedule_run_is_recorded_in_the_ledger_as_off_schedule(
    api: TriggerApi, runtime: LocalLambdaRuntime
) -> None:
    off_schedule = '{"scheduled_time": "2026-11-29T14:05:00Z", "off_schedule": true}'
    with at(NOW):
        # Given the caller asks for the instant explicitly
        status, body = api.press(JOB, body=off_schedule)
        # When the job runs what was queued, as Lambda would
        [queued] = api.invocations
        executed = runtime.invoke(JOB_FUNCTION, queued.payload)
        drain_workers(runtime)
        # And the same instant is pressed again
        again_status, again = api.press(JOB, body=off_schedule)

    # Then it ran as an off-schedule tick, and the ledger (which the second press reads) says so
    assert (status, body["tick"]["trigger"]) == (202, "off-schedule")
    assert executed["outcome"] == "executed"
    assert (again_status, again["status"], again["trigger"]) == (200, "succeeded", "off-schedule")
    assert again["scheduled_time"] == "2026-11-29T14:05:00Z"


@pytest.mark.parametrize("offset", [timedelta(minutes=-16), timedelta(days=-1)])
def test_a_time_before_the_window_is_400_pointing_at_backfill(api: TriggerApi, offset: timedelta) -> None:
    scheduled = (NOW + offset).replace(second=0)
    window = int(api.runtime.environment(FUNCTION)["TRIGGER_WINDOW_MINUTES"])

    with at(NOW):
        status, body = api.press(body=json.dumps({"scheduled_time": scheduled.strftime("%Y-%m-%dT%H:%M:%SZ")}))

    assert status == 400
    assert body["field"] == "scheduled_time"
    assert f"more than {window} minutes before now" in body["message"]
    assert "clockless backfill" in body["message"]
    assert api.invocations == []


@pytest.mark.parametrize("offset", [timedelta(minutes=1), timedelta(minutes=14), timedelta(days=365 * 4)])
def test_a_time_from_the_future_is_400_and_nothing_is_read_or_invoked(api: TriggerApi, offset: timedelta) -> None:
    # Given a minute after now: inside the old 15-minute window, which let a press delete sessions in grace
    scheduled = (NOW + offset).replace(second=0)

    with at(NOW):
        status, body = api.press(body=json.dumps({"scheduled_time": scheduled.strftime("%Y-%m-%dT%H:%M:%SZ")}))

    assert status == 400
    assert body["field"] == "scheduled_time"
    assert "in the future" in body["message"]
    assert api.invocations == []
    assert api.ledger_reads == 0


# ---------------------------------------------------------------------------------------------- samples
def test_every_sample_event_is_listed_here() -> None:
    assert sorted(p.name for p in (EVENTS / "job_trigger").glob("*.json")) == sorted(SAMPLE_STATUS)


@pytest.mark.parametrize(("sample", "expected"), sorted(SAMPLE_STATUS.items()))
def test_each_sample_event_gets_its_answer(api: TriggerApi, sample: str, expected: int) -> None:
    event = load_event(f"job_trigger/{sample}")
    with at(NOW):
        status, _ = api.send(event)

    assert status == expected
    assert len(api.invocations) == (1 if expected == 202 else 0)


# ---------------------------------------------------------------------------------------------- logs
def test_no_secret_reaches_the_logs(api: TriggerApi) -> None:
    # Given a rotation, so both values are in play, and the function's log stream captured
    from job_trigger.handler import logger

    api.store_secret({"current": "rotated-value-2", "previous": LOCAL_SECRET_VALUE})
    stream = io.StringIO()
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    previous_stream = handler.setStream(stream)

    # When callers press with the current, the previous and a near-miss value
    try:
        with at(NOW):
            api.press(secret="rotated-value-2")
            api.press(secret=LOCAL_SECRET_VALUE)
            api.press(secret="rotated-value-3")
    finally:
        handler.setStream(previous_stream)
    logs = stream.getvalue()

    # Then the function logged each answer, and no value of the secret
    assert logs.count('"trigger answered"') == 2
    assert logs.count('"trigger refused: no valid secret"') == 1
    for value in ("rotated-value-2", LOCAL_SECRET_VALUE, "rotated-value-3"):
        assert value not in logs


# ---------------------------------------------------------------------------------------------- replay
def test_a_request_id_seen_in_the_window_gets_the_first_answer_and_invokes_nothing(api: TriggerApi) -> None:
    # Given a press answered 202
    with at(NOW):
        first = api.press(JOB, body=None, request_id="replayed-1")
    assert first[0] == 202
    assert len(api.invocations) == 1

    # When the same request (its request id) arrives again in the window, a minute later
    with at(NOW + timedelta(minutes=1)):
        again = api.press(JOB, body=None, request_id="replayed-1")
        other = api.press(JOB, body=None, request_id="another-2")

    # Then it gets the first answer, word for word, and nothing is invoked for it
    assert again == first
    assert len(api.invocations) == 2  # the other request id's press only
    assert other[0] == 202


def test_a_request_id_after_the_window_is_answered_afresh(api: TriggerApi) -> None:
    with at(NOW):
        api.press(JOB, body=None, request_id="replayed-1")

    # An hour later: past the window, and the next hourly tick is the latest
    with at(NOW + timedelta(hours=1)):
        status, body = api.press(JOB, body=None, request_id="replayed-1")

    assert status == 202
    assert body["scheduled_time"] == "2026-11-29T15:00:00Z"
    assert len(api.invocations) == 2


# ---------------------------------------------------------------------------------------------- 409
def test_a_paused_job_is_409_naming_the_pause_unless_the_body_overrides_it_which_the_ledger_records(
    api: TriggerApi, runtime: LocalLambdaRuntime, template: Template, tables: Any
) -> None:
    # Given the job paused by an operator (`clockless pause`, here its ledger half: no schedule)
    ledger = RunLedger("LedgerTable", tables, retention_seconds=86400)
    tables.put_item(
        TableName="LedgerTable",
        Item=state_item(
            ledger.key(JOB, CURRENT_STATE), action=PAUSED, at="2026-11-29T13:00:00Z", by="ops@laptop", reason="INC-7"
        ),
    )
    with at(NOW):
        refused_status, refused = api.press(JOB)
        status, body = api.press(JOB, body='{"override_pause": true}')

    assert refused_status == 409
    assert refused["error"] == "paused"
    assert refused["paused"] == {"since": "2026-11-29T13:00:00Z", "by": "ops@laptop", "reason": "INC-7"}
    assert refused["message"].startswith(f"{JOB} is paused (since 2026-11-29T13:00:00Z by ops@laptop: INC-7)")
    # Only the override reached the job's function, and the ledger's history names it.
    assert (status, body["pause_overridden"]["reason"]) == (202, "INC-7")
    assert len(api.invocations) == 1
    history = tables.query(
        TableName="LedgerTable",
        KeyConditionExpression="job = :job AND begins_with(scheduled_time, :prefix)",
        ExpressionAttributeValues={":job": {"S": JOB}, ":prefix": {"S": STATE_PREFIX}},
    )["Items"]
    (record,) = history
    assert record["status"]["S"] == "pause-overridden"
    assert record["tick"]["S"] == body["scheduled_time"]
    assert record["changed_by"]["S"].startswith("http trigger (request req-")
