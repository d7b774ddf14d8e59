"""The embedded DynamoDB applies one DynamoDB request at a time, so conditional writes are atomic."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from clockless_tools.local.dynamodb import SerializedDynamoDB


class SlowApp:
    """Stands in for moto: counts how many requests are inside it at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.most_inside = 0
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with self._lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        time.sleep(0.02)  # a check-then-write window wide enough for any overlap to show
        with self._lock:
            self.inside -= 1
        start_response("200 OK", [])
        return [b"{}"]


def _concurrently(app: Callable[..., Iterable[bytes]], target: str, copies: int = 8) -> None:
    barrier = threading.Barrier(copies)

    def call(_: int) -> list[bytes]:
        barrier.wait()
        return list(app({"HTTP_X_AMZ_TARGET": target}, lambda *_args: None))

    with ThreadPoolExecutor(max_workers=copies) as pool:
        assert list(pool.map(call, range(copies))) == [[b"{}"]] * copies


def test_dynamodb_requests_never_overlap() -> None:
    inner = SlowApp()

    _concurrently(SerializedDynamoDB(inner), "DynamoDB_20120810.PutItem")

    assert inner.most_inside == 1


def test_other_services_are_not_held_up() -> None:
    inner = SlowApp()

    _concurrently(SerializedDynamoDB(inner), "secretsmanager.GetSecretValue")

    assert inner.most_inside > 1
