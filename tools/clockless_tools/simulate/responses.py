"""DynamoDB's (and SQS's) answers as the fault injector makes them up: errors in the service's JSON
shape, including a throttle as each shapes it (a DynamoDB transaction cancelled with
`ThrottlingError`, SQS's `RequestThrottled`)."""

from __future__ import annotations

import json
from typing import Any, Final

from botocore.awsrequest import AWSResponse

from clockless_tools.local.in_process import ReadBody

THROTTLED_MESSAGE: Final = "Throughput exceeds the current capacity (injected)"


def operation_of(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"") if hasattr(request, "headers") else b""
    target = target.decode() if isinstance(target, bytes) else str(target)
    return target.rsplit(".", 1)[-1]


def payload_of(request: Any) -> dict[str, Any]:
    body = request.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        payload = json.loads(body or "{}")
    except (TypeError, ValueError):
        return {}
    return payload if isinstance(payload, dict) else {}


def made_up_response(request: Any, status: int, content: bytes, headers: dict[str, str] | None = None) -> AWSResponse:
    fields: Any = headers or {"Content-Type": "application/x-amz-json-1.0"}
    return AWSResponse(request.url, status, fields, ReadBody(content))


def is_sqs(request: Any) -> bool:
    target = request.headers.get("X-Amz-Target", b"") if hasattr(request, "headers") else b""
    return (target.decode() if isinstance(target, bytes) else str(target)).startswith("AmazonSQS.")


def error_response(request: Any, code: str, message: str) -> AWSResponse:
    namespace = "com.amazonaws.sqs" if is_sqs(request) else "com.amazonaws.dynamodb.v20120810"
    body = json.dumps({"__type": f"{namespace}#{code}", "message": message})
    return made_up_response(request, 400, body.encode())


def throttle_error_response(request: Any) -> AWSResponse:
    """A whole request refused for capacity, with the code its service gives: SQS `RequestThrottled`,
    DynamoDB `ThrottlingException`."""
    return error_response(request, "RequestThrottled" if is_sqs(request) else "ThrottlingException", THROTTLED_MESSAGE)


def throttled_response(request: Any) -> AWSResponse:
    """A refusal for capacity in DynamoDB's shape: a transaction cancelled with `ThrottlingError`
    on its first action (the others not evaluated), any other request `ThrottlingException`."""
    if operation_of(request) != "TransactWriteItems":
        return throttle_error_response(request)
    actions = len(payload_of(request).get("TransactItems") or []) or 1
    reasons = [{"Code": "ThrottlingError", "Message": THROTTLED_MESSAGE}] + [{"Code": "None"}] * (actions - 1)
    body = {
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
        f"[{', '.join(r['Code'] for r in reasons)}]",
        "CancellationReasons": reasons,
    }
    return made_up_response(request, 400, json.dumps(body).encode())
