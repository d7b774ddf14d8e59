"""Regressions of issue 11 (findings 1, 2 and the ledger's part of 5), each a fault DynamoDB and
Lambda produce every day, injected into a real delivery on the embedded DynamoDB.

The contract (docs/tick-contract.md): a delivery that returns success has taken the tick's effect
or leaves it held by another live attempt; otherwise it raises, and Lambda's retry runs the tick.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from clockless import JobRun, ScheduledJob, Tick, Trigger, format_scheduled_time
from clockless_tools.local.runtime import LocalLambdaContext
from clockless_tools.simulate.faults import FaultInjector, FaultKind, RequestRecord
from tests.integration.conftest import scan_all

TICK_TIME = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)
OTHER_TICK = TICK_TIME - timedelta(days=1)
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def _event(scheduled: datetime = TICK_TIME) -> dict[str, Any]:
    return Tick("kit-test", scheduled, None, 1, "exec-1", Trigger.SCHEDULE).to_event()


def _context(request_id: str | None = None) -> LocalLambdaContext:
    context = LocalLambdaContext("kit-test-fn", 512, 120, "arn:aws:lambda:us-east-1:1:function:kit-test-fn")
    context.aws_request_id = request_id or str(uuid.uuid4())
    return context


@pytest.fixture
def faults() -> Iterator[FaultInjector]:
    injector = FaultInjector()
    with injector.installed():
        yield injector


@pytest.fixture
def runs() -> list[str]:
    return []


@pytest.fixture
def handler(kit_env: Any, runs: list[str]) -> Handler:
    job = ScheduledJob("kit-test")

    @job.handler
    def lambda_handler(run: JobRun) -> dict[str, Any]:
        runs.append(run.tick.key)
        return {"ran": len(runs)}

    return lambda_handler


def _ledger_key(scheduled: datetime) -> dict[str, Any]:
    return {"job": {"S": "kit-test"}, "scheduled_time": {"S": format_scheduled_time(scheduled)}}


def _ledger(tables: Any, scheduled: datetime = TICK_TIME) -> dict[str, Any]:
    return dict(tables.get_item(TableName="LedgerTable", Key=_ledger_key(scheduled)).get("Item") or {})


def _clean_requests(handler: Handler, faults: FaultInjector) -> list[RequestRecord]:
    """The requests of one clean first delivery (of another tick), to aim faults at."""
    faults.watch()
    handler(_event(OTHER_TICK), _context())
    requests = faults.requests()
    faults.disarm()
    return requests


def _deliver_with(
    faults: FaultInjector,
    handler: Handler,
    index: int,
    kind: FaultKind,
    *,
    request_id: str | None = None,
    **options: Any,
) -> Any:
    faults.arm(index, kind, count_spared=True, **options)
    try:
        return handler(_event(), _context(request_id))
    finally:
        assert faults.disarm() is True, f"the {kind} fault at request {index} never fired"


# ----------------------------------------------------------------------------- finding 1: the claim
def test_a_claim_whose_answer_was_lost_and_resent_runs_the_tick(
    handler: Handler, faults: FaultInjector, runs: list[str], kit_env: Any
) -> None:
    result = _deliver_with(faults, handler, 1, FaultKind.LOST_RESPONSE)

    assert result["outcome"] == "executed"
    assert runs == ["kit-test@2026-11-29T14:00:00Z"]
    entry = _ledger(kit_env)
    assert (entry["status"]["S"], entry["attempts"]["N"]) == ("succeeded", "1")


def test_a_rerun_claim_whose_answer_was_lost_and_resent_runs_the_tick(
    handler: Handler, faults: FaultInjector, runs: list[str], kit_env: Any
) -> None:
    # Given the tick (and another) succeeded and their idempotency records expired
    handler(_event(), _context())
    handler(_event(OTHER_TICK), _context())
    with time_machine.travel(timedelta(seconds=3600 + 60), tick=True):
        # When the re-run's claim (a PutItem on the idempotency table) loses its answer
        faults.watch()
        handler(_event(OTHER_TICK), _context())  # a clean re-run of the other, to find its claim
        claim = next(r.index for r in faults.requests() if r.operation == "PutItem" and "IdempotencyTable" in r.tables)
        faults.disarm()
        result = _deliver_with(faults, handler, claim, FaultKind.LOST_RESPONSE)

    # Then the re-run runs, and the ledger keeps the first outcome
    assert result["outcome"] == "executed"
    assert result.get("rerun") is True
    assert runs.count("kit-test@2026-11-29T14:00:00Z") == 2
    assert _ledger(kit_env)["status"]["S"] == "succeeded"


@pytest.mark.parametrize("earlier_attempt", [False, True], ids=["first delivery", "retry"])
def test_a_resent_claim_dynamodb_did_not_recognise_is_still_its_own(
    kit_env: Any, runs: list[str], handler: Handler, earlier_attempt: bool
) -> None:
    """Without the transaction's token the resend meets its own claim: the claim id says it is ours."""
    unrecognised = FaultInjector(client_request_tokens=False)
    with unrecognised.installed():
        if earlier_attempt:
            with pytest.raises(Exception):  # noqa: B017, PT011 - a first attempt whose completion is refused
                _deliver_with(unrecognised, handler, 2, FaultKind.REFUSED)
        # the claim's transaction(s): the first asks for a fresh ledger entry, a retry's second claims
        claim = 2 if earlier_attempt else 1
        result = _deliver_with(unrecognised, handler, claim, FaultKind.LOST_RESPONSE)

    assert result["outcome"] == "executed"
    entry = _ledger(kit_env)
    assert (entry["status"]["S"], entry["attempts"]["N"]) == ("succeeded", "2" if earlier_attempt else "1")


# ------------------------------------------------------------------------ finding 2: the completion
def test_a_failed_completion_releases_the_claim_and_the_retry_a_minute_later_runs_the_tick(
    handler: Handler, faults: FaultInjector, runs: list[str], kit_env: Any
) -> None:
    completion = len(_clean_requests(handler, faults))

    with time_machine.travel(TICK_TIME + timedelta(seconds=20), tick=False) as clock:
        with pytest.raises(Exception):  # noqa: B017, PT011 - whatever botocore raised: Lambda sees an error
            _deliver_with(faults, handler, completion, FaultKind.REFUSED)
        assert _ledger(kit_env)["status"]["S"] == "failed"
        assert [r for r in scan_all(kit_env, "IdempotencyTable") if r["status"]["S"] == "INPROGRESS"] == []
        clock.shift(timedelta(minutes=1))
        retried = handler(_event(), _context())

    assert retried["outcome"] == "executed"
    entry = _ledger(kit_env)
    assert (entry["status"]["S"], entry["attempts"]["N"]) == ("succeeded", "2")


@pytest.mark.parametrize("kind", [FaultKind.THROTTLED, FaultKind.TRANSACTION_THROTTLED], ids=str)
def test_a_throttled_completion_is_waited_out_in_the_same_attempt(
    handler: Handler, faults: FaultInjector, kit_env: Any, kind: FaultKind
) -> None:
    completion = len(_clean_requests(handler, faults))

    with time_machine.travel(TICK_TIME + timedelta(seconds=20), tick=False):
        result = _deliver_with(faults, handler, completion, kind, then={completion + 1: kind})

    # Throttled twice, resent a third time: no error for Lambda to retry, one attempt in the ledger
    assert result["outcome"] == "executed"
    entry = _ledger(kit_env)
    assert (entry["status"]["S"], entry["attempts"]["N"]) == ("succeeded", "1")


def test_when_the_release_fails_too_lambdas_retry_of_the_same_request_takes_the_claim_over(
    handler: Handler, faults: FaultInjector, kit_env: Any
) -> None:
    completion = len(_clean_requests(handler, faults))
    request_id = str(uuid.uuid4())

    with time_machine.travel(TICK_TIME + timedelta(seconds=20), tick=False) as clock:
        with pytest.raises(Exception):  # noqa: B017, PT011
            _deliver_with(
                faults,
                handler,
                completion,
                FaultKind.REFUSED,
                then={completion + 1: FaultKind.REFUSED},
                request_id=request_id,
            )
        clock.shift(timedelta(minutes=1))
        retried = handler(_event(), _context(request_id))

    assert retried["outcome"] == "executed"
    assert _ledger(kit_env)["status"]["S"] == "succeeded"


def test_a_completion_applied_whose_answer_never_came_back_is_a_success(
    handler: Handler, faults: FaultInjector, kit_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    completion = len(_clean_requests(handler, faults))

    result = _deliver_with(faults, handler, completion, FaultKind.LOST_THEN_THROTTLED)

    assert result["outcome"] == "executed"
    entry = _ledger(kit_env)
    assert (entry["status"]["S"], entry["attempts"]["N"]) == ("succeeded", "1")
    assert "released" not in caplog.text


# ----------------------------------------------------------------------- finding 5: ledger truth
def test_a_lost_answer_to_any_ledger_write_counts_one_attempt(
    handler: Handler, faults: FaultInjector, kit_env: Any
) -> None:
    ledger_writes = [r.index for r in _clean_requests(handler, faults) if "LedgerTable" in r.tables]
    assert ledger_writes

    counted = {}
    for index in ledger_writes:
        # a fresh start for the tick: no ledger entry, no idempotency record
        kit_env.delete_item(TableName="LedgerTable", Key=_ledger_key(TICK_TIME))
        for record in scan_all(kit_env, "IdempotencyTable"):
            kit_env.delete_item(TableName="IdempotencyTable", Key={"id": record["id"]})
        _deliver_with(faults, handler, index, FaultKind.LOST_RESPONSE)
        counted[index] = _ledger(kit_env)["attempts"]["N"]

    assert counted == dict.fromkeys(ledger_writes, "1")


def test_the_summary_of_a_retry_after_a_failed_attempt_says_it_is_that_attempts_share(kit_env: Any) -> None:
    job = ScheduledJob("kit-test")
    attempts: list[int] = []

    @job.handler
    def flaky(run: JobRun) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("failed half way")
        return {"done": 1}

    with pytest.raises(RuntimeError):
        flaky(_event(), _context())
    flaky(_event(), _context())
    flaky(_event(OTHER_TICK), _context())

    retried, clean = _ledger(kit_env), _ledger(kit_env, OTHER_TICK)
    assert (retried["attempts"]["N"], retried["summary_scope"]["S"]) == ("2", "last_attempt")
    assert (clean["attempts"]["N"], clean["summary_scope"]["S"]) == ("1", "tick")
