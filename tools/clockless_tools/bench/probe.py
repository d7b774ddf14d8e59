"""Run by `make bench` as a script in a fresh interpreter, often with `-S` and only the paths a
Lambda function would see (its code, its layer, the runtime's boto3). Standard library only, so it
measures nothing but what it is asked to import.

    python -S probe.py import <module> <path>...            prints the import's seconds
    python -S probe.py tick <module> <event-json> <path>...  prints the handler's response
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any


class _Context:
    """The attributes of Lambda's context object that the kit reads."""

    def __init__(self, function_name: str, timeout_seconds: int = 60) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "bench"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def time_import(module: str, paths: list[str]) -> float:
    sys.path[:0] = paths
    started = time.perf_counter()
    __import__(module)
    return time.perf_counter() - started


def deliver(module: str, event: dict[str, Any], paths: list[str]) -> Any:
    sys.path[:0] = paths
    handler = __import__(module, fromlist=["lambda_handler"]).lambda_handler
    return handler(event, _Context(module.split(".", 1)[0]))


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "import":
        print(repr(time_import(argv[1], argv[2:])))
        return 0
    if len(argv) >= 3 and argv[0] == "tick":
        response = deliver(argv[1], json.loads(argv[2]), argv[3:])
        # The handler's own logs go to stdout too; the response is the last line.
        print(json.dumps(response, default=str))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
