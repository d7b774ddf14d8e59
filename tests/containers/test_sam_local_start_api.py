"""The HTTP trigger behind `sam local start-api`, in real containers on the embedded stack, with the
jobs' functions behind `sam local start-lambda`: the trigger's asynchronous invoke reaches SAM's
Lambda endpoint, which runs the job's function in its own container, as Lambda would.

- a wrong secret (401), a body that is not JSON (400) and an instant that is not one of the job's
  ticks (400, naming the ticks around it) change nothing in any table and invoke nothing;
- the right secret hands the latest tick over (202), the tick runs, and its partitions are drained
  through start-lambda: the tables and the ledger are what `clockless invoke` of the same tick makes
  on a stack holding the same data;
- the same request id twice takes effect once. SAM CLI 1.170's local API gives every request of one
  `start-api` process the same request id (a default argument evaluated once,
  samcli/local/events/api_event.py; aws/aws-sam-cli#9279), so every later request to it is a replay
  of its first to the trigger: the second press, naming another tick, gets the first's answer, and
  its tick is never handed over nor reaches the ledger;
- pressed again for the tick that ran, from a new `start-api` (a new request id), the trigger
  answers the ledger's outcome (200) and invokes nothing.

Slow and in containers: `make test-containers` (CI runs it)."""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clockless.ledger import STATUS_SUCCEEDED, RunLedger
from clockless_tools.engine.dockerd import bridge_gateway
from clockless_tools.engine.sam_local import free_port
from clockless_tools.local.poller import OUTCOME_DONE, Message, SqsPoller
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.local.services import LOCAL_SECRET_VALUE
from job_trigger.repository import DynamoRequestRecords
from tests.containers.harness import SamLocal, Stack, differences, lambda_client
from tests.jobs import HOUR, job_where, jobs, project_template

pytestmark = [pytest.mark.slow, pytest.mark.containers]

TRIGGER = "JobTriggerFunction"
JOB = job_where(period=HOUR)
# The template's window (15 minutes) would refuse the latest tick of an hourly job for most of each
# hour; the parameter's widest value accepts it whenever the test runs.
WINDOW = "TriggerWindowMinutes=1440"
# What SAM's Lambda endpoint logs for each asynchronous invoke it accepts (Flask's access log, its
# colours removed): the function named by its ARN, as the trigger names it.
HANDED_OVER = re.compile(
    r'"POST /2015-03-31/functions/arn:aws:lambda:[\w-]+:\d+:function:(\w+)/invocations HTTP/1\.1" 202'
)
COLOURS = re.compile(r"\x1b\[[0-9;]*m")
TICK_SECONDS = 600
WARM_UP_TRIES = 3


@dataclass
class Api:
    sam: SamLocal
    reference: Stack
    api_port: int
    lambda_port: int
    lambda_host: str

    def press(
        self, body: str | None, *, secret: str = LOCAL_SECRET_VALUE, job: str = JOB.name
    ) -> tuple[int, dict[str, Any]]:
        """POST /jobs/<job>/ticks to `sam local start-api`, as a caller's curl would."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.api_port}/jobs/{job}/ticks",
            data=None if body is None else body.encode(),
            headers={"Content-Type": "application/json", "X-Clockless-Secret": secret},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                return int(answer.status), json.loads(answer.read())
        except urllib.error.HTTPError as refused:
            return int(refused.code), json.loads(refused.read())

    def handed_over(self) -> list[str]:
        """The functions SAM's Lambda endpoint accepted an asynchronous invoke of, in order."""
        return HANDED_OVER.findall(COLOURS.sub("", self.sam.log("start-lambda").read_text(encoding="utf-8")))

    def invocations(self) -> tuple[int, int]:
        """How many invocations start-lambda has begun and ended."""
        log = self.sam.log("start-lambda").read_text(encoding="utf-8")
        return log.count("\nInvoking "), log.count("\nEND RequestId: ")

    def settle(self, begun_before: int) -> None:
        """Wait until start-lambda has begun an invocation since it had begun `begun_before`, and
        ended every one it began."""
        deadline = time.monotonic() + TICK_SECONDS
        while True:
            begun, ended = self.invocations()
            if begun > begun_before and ended >= begun:
                return
            log = self.sam.log("start-lambda").read_text(encoding="utf-8")
            assert time.monotonic() < deadline, f"start-lambda's invocations did not end:\n{log[-3000:]}"
            time.sleep(1)

    def run_handed_over_tick(self, tick: Mapping[str, Any], workdir: Path, begun_before: int) -> None:
        """The tick the trigger handed over: its coordinator's run awaited (start-lambda had begun
        `begun_before` invocations before the request), its partitions drained through
        start-lambda, and the same tick run by `clockless invoke` on the reference stack; then both
        stacks' tables must be the same (the trigger's records of the requests it answered aside)."""
        self.settle(begun_before)
        client = lambda_client(self.lambda_host, self.lambda_port)

        def invoke(function_id: str, event: dict[str, Any], messages: Sequence[Message]) -> tuple[Any, Any]:
            answer = client.invoke(FunctionName=function_id, Payload=json.dumps(event).encode())
            payload = json.loads(answer["Payload"].read() or b"null")
            assert "FunctionError" not in answer, payload
            return payload, None

        runtime = LocalLambdaRuntime(project_template(), self.sam.stack.endpoint)
        invocations = SqsPoller(runtime, self.sam.stack.endpoint, invoke=invoke, parallel=False).drain()
        assert [i.outcome for i in invocations] == [OUTCOME_DONE] * len(invocations)
        assert len(invocations) >= JOB.shards

        path = workdir / "handed-over-tick.json"
        path.write_text(json.dumps(tick), encoding="utf-8")
        expected = self.reference.cli("invoke", JOB.function_id, "-e", str(path), "--endpoint", self.reference.endpoint)
        assert json.loads(expected.stdout.splitlines()[0])["outcome"] == "executed", expected.stdout
        different = differences(jobs_tables(self.sam.stack), jobs_tables(self.reference))
        assert not different, "\n".join(different)


def jobs_tables(stack: Stack) -> dict[str, list[Any]]:
    """Every table without the trigger's own records of the requests it answered."""
    return {
        table: [i for i in items if not str(i.get("id", {}).get("S", "")).startswith(DynamoRequestRecords.PREFIX)]
        for table, items in stack.contents().items()
    }


def request_records(stack: Stack) -> list[dict[str, Any]]:
    """The answers the trigger recorded, one per request id, as it stored them."""
    pages = stack.client("dynamodb").get_paginator("scan").paginate(TableName="IdempotencyTable")
    return [
        {"id": item["id"]["S"], **json.loads(item["data"]["S"])}
        for page in pages
        for item in page["Items"]
        if item["id"]["S"].startswith(DynamoRequestRecords.PREFIX)
    ]


def ledger_entry(stack: Stack, scheduled_time: str) -> dict[str, Any] | None:
    key = RunLedger.key(JOB.name, scheduled_time)
    item: dict[str, Any] | None = stack.client("dynamodb").get_item(TableName="LedgerTable", Key=key).get("Item")
    return item


@dataclass
class Servers:
    """start-lambda on the bridge's gateway (where the trigger's container reaches it, as
    host.docker.internal), for a start-api on loopback at a time."""

    sam: SamLocal
    reference: Stack
    lambda_port: int
    lambda_host: str

    @contextlib.contextmanager
    def api(self) -> Iterator[Api]:
        """A `sam local start-api` of its own (so a request id of its own), its trigger started."""
        port = free_port()
        with self.sam.serving("start-api", port, "--warm-containers", "LAZY"):
            api = Api(self.sam, self.reference, port, self.lambda_port, self.lambda_host)
            # The trigger's Timeout is 10 s, and RIE counts its first start (the imports) in it: on
            # a loaded machine that start can take longer, and SAM answers 502. Its container stays
            # warm (LAZY), so it is started first, by a request that changes nothing (a 401 is
            # answered before any request id is read or recorded).
            for _ in range(WARM_UP_TRIES):
                status, _ = api.press("{}", secret="warm-up")
                if status == 401:
                    break
            assert status == 401, (
                f"the trigger did not start in {WARM_UP_TRIES} tries:\n{self.sam.log('start-api').read_text()}"
            )
            yield api


@pytest.fixture(scope="module")
def servers(sam_local: SamLocal, reference: Stack) -> Iterator[Servers]:
    """The trigger's Lambda endpoint moved to start-lambda, and its jobs named by their functions'
    logical ids, which start-lambda serves."""
    lambda_host, lambda_port = bridge_gateway(sam_local.engine), free_port()
    functions = {job.name: f"arn:aws:lambda:us-east-1:123456789012:function:{job.function_id}" for job in jobs()}
    sam = replace(
        sam_local,
        env_file=sam_local.env_file.with_name("env.start-api.json"),
        parameters=(*sam_local.parameters, WINDOW),
    )
    sam.write_env_file(
        {
            TRIGGER: {
                "AWS_ENDPOINT_URL_LAMBDA": f"http://host.docker.internal:{lambda_port}",
                "JOB_FUNCTIONS": json.dumps(functions),
            }
        }
    )
    with sam.serving("start-lambda", lambda_port, "--warm-containers", "LAZY", host=lambda_host):
        yield Servers(sam, reference, lambda_port, lambda_host)


def _hour(moment: datetime) -> str:
    return moment.replace(minute=0, second=0, microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_refused_request_answers_its_status_and_changes_nothing(servers: Servers) -> None:
    off_tick = _hour(datetime.now(UTC) - 2 * HOUR).replace(":00:00Z", ":07:00Z")
    refusals = [
        ("{}", "not-the-secret", 401, {"message": "Unauthorized"}),
        ("{not json", LOCAL_SECRET_VALUE, 400, {"error": "bad_request", "field": "<body>"}),
        (json.dumps({"scheduled_time": off_tick}), LOCAL_SECRET_VALUE, 400, {"error": "not_a_tick"}),
    ]
    with servers.api() as api:
        for body, secret, status, answer in refusals:
            before, handed_over = api.sam.stack.contents(), api.handed_over()

            answered, refusal = api.press(body, secret=secret)

            assert answered == status, refusal
            assert {key: refusal[key] for key in answer} == answer, refusal
            assert api.sam.stack.contents() == before
            assert api.handed_over() == handed_over
    # The instant's refusal names the job's ticks around it, in one line
    assert "\n" not in refusal["message"]
    assert (refusal["scheduled_before"], refusal["scheduled_after"]) == (
        off_tick.replace(":07:00Z", ":00:00Z"),
        _hour(datetime.fromisoformat(off_tick) + HOUR),
    )


def test_the_right_secret_runs_the_tick_once_a_replay_takes_no_effect_and_a_new_press_answers_its_outcome(
    servers: Servers, workdir: Path
) -> None:
    with servers.api() as api:
        handed_over, (begun, _) = api.handed_over(), api.invocations()

        # The button, with no time: the job's latest tick, handed to its function, run as clockless invoke runs it
        status, accepted = api.press("{}")
        assert status == 202, accepted
        assert (accepted["invoked"], accepted["tick"]["trigger"]) == (True, "http")
        assert api.handed_over() == [*handed_over, JOB.function_id]
        api.run_handed_over_tick(accepted["tick"], workdir, begun)
        entry = ledger_entry(api.sam.stack, accepted["scheduled_time"])
        assert entry is not None
        assert (entry["status"]["S"], entry["trigger"]["S"], entry["attempts"]["N"]) == (STATUS_SUCCEEDED, "http", "1")
        [first] = request_records(api.sam.stack)
        assert (first["status_code"], first["body"]) == (202, accepted)

        # The same request id again (this start-api's), naming another tick: the first answer, nothing else happens
        before = api.sam.stack.contents()
        other = _hour(datetime.fromisoformat(accepted["scheduled_time"]) - HOUR)
        status, replayed = api.press(json.dumps({"scheduled_time": other}))
        assert (status, replayed) == (202, accepted)
        assert api.handed_over() == [*handed_over, JOB.function_id]
        assert ledger_entry(api.sam.stack, other) is None
        assert api.sam.stack.contents() == before

    # Pressed again for that tick with a new request id: the ledger's outcome, nothing invoked,
    # no table changed but the new answer's record
    with servers.api() as api:
        before, answers = jobs_tables(api.sam.stack), request_records(api.sam.stack)
        status, outcome = api.press(json.dumps({"scheduled_time": accepted["scheduled_time"]}))
        assert status == 200, outcome
        assert (outcome["status"], outcome["invoked"], outcome["attempts"]) == (STATUS_SUCCEEDED, False, 1)
        assert api.handed_over() == [*handed_over, JOB.function_id]
        assert jobs_tables(api.sam.stack) == before
        recorded = [record for record in request_records(api.sam.stack) if record not in answers]
        assert [(record["status_code"], record["body"]) for record in recorded] == [(200, outcome)]
