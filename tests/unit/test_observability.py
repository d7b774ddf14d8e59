"""The kit's invocation context: what every log line carries, and when a start is cold."""

from __future__ import annotations

import threading

import pytest

from clockless.observability import ColdStart, lambda_context_keys
from clockless_tools.local.runtime import LocalLambdaContext


def test_the_context_keys_are_the_ones_inject_lambda_context_adds() -> None:
    context = LocalLambdaContext("fn", 512, 60, "arn:aws:lambda:us-east-1:1:function:fn", aws_request_id="req-1")

    assert lambda_context_keys(context) == {
        "function_name": "fn",
        "function_memory_size": 512,
        "function_arn": "arn:aws:lambda:us-east-1:1:function:fn",
        "function_request_id": "req-1",
    }


def test_no_context_adds_no_keys_rather_than_nulls() -> None:
    assert lambda_context_keys(None) == {}


def test_only_the_first_invocation_is_cold_even_when_deliveries_race(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_INITIALIZATION_TYPE", raising=False)
    cold_start = ColdStart()
    barrier = threading.Barrier(8)
    seen: list[bool] = []

    def deliver() -> None:
        barrier.wait()
        seen.append(cold_start.take())

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(seen) == [False] * 7 + [True]
    assert cold_start.take() is False


def test_provisioned_concurrency_is_never_a_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Lambda initialises provisioned environments before any request arrives.
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "provisioned-concurrency")

    assert ColdStart().take() is False
