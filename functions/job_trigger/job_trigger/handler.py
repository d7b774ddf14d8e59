"""POST /jobs/{job}/ticks behind the HTTP API: thin handler over `logic.trigger_tick`.

The API sends this function one route, so the handler reads the HTTP API's payload (format 2.0)
itself instead of going through Powertools' `event_handler`, whose package imports every resolver
it has: measured, 15-23 % of the trigger's cold import for one route (docs/observability.md).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from aws_lambda_powertools.logging import correlation_paths

from clockless.config import metrics_namespace
from clockless.observability import Observability, service_logger
from clockless.tick import utc_now
from job_trigger.logic import (
    TickRequest,
    TriggerRejected,
    TriggerResponse,
    Unauthorized,
    trigger_tick,
)
from job_trigger.repository import (
    DynamoRequestRecords,
    DynamoTickLedger,
    LambdaJobInvoker,
    SecretsManagerTriggerSecret,
)
from job_trigger.secret import SECRET_HEADER
from job_trigger.settings import JobTriggerSettings

ROUTE: Final = "POST /jobs/{job}/ticks"

# Never log the event: its headers carry the secret.
logger = service_logger("job-trigger")
observability = Observability(logger, service="job-trigger")


@dataclass(frozen=True, slots=True)
class Dependencies:
    settings: JobTriggerSettings
    secret: SecretsManagerTriggerSecret
    ledger: DynamoTickLedger
    requests: DynamoRequestRecords
    invoker: LambdaJobInvoker


@functools.cache
def dependencies() -> Dependencies:
    """Built on first use (cold start) from the environment; cached for the execution environment."""
    settings = JobTriggerSettings.from_env()
    return Dependencies(
        settings=settings,
        secret=SecretsManagerTriggerSecret(settings.secret_id, max_age_seconds=settings.secret_max_age_seconds),
        ledger=DynamoTickLedger(settings.ledger_table),
        requests=DynamoRequestRecords(settings.requests_table),
        invoker=LambdaJobInvoker(),
    )


def _json_response(response: TriggerResponse) -> dict[str, Any]:
    return {
        "statusCode": response.status_code,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(response.body, sort_keys=True),
        "isBase64Encoded": False,
    }


def post_tick(job: str, event: Mapping[str, Any]) -> dict[str, Any]:
    deps = dependencies()
    # The HTTP API lower-cases header names in payload format 2.0.
    headers = {str(name).lower(): value for name, value in (event.get("headers") or {}).items()}
    context = event.get("requestContext") or {}
    request = TickRequest(
        job=job,
        presented_secret=headers.get(SECRET_HEADER),
        body=event.get("body"),
        body_base64_encoded=bool(event.get("isBase64Encoded")),
        request_id=str(context.get("requestId", "")),
        now=utc_now(),
    )
    try:
        response = trigger_tick(
            request,
            secret=deps.secret,
            job_functions=deps.settings.job_functions,
            job_schedules=deps.settings.job_schedules,
            window=deps.settings.window,
            ledger=deps.ledger,
            invoker=deps.invoker,
            requests=deps.requests,
        )
    except Unauthorized as rejected:
        source_ip = (context.get("http") or {}).get("sourceIp")
        logger.warning("trigger refused: no valid secret", extra={"source_ip": source_ip})
        return _json_response(TriggerResponse(rejected.status_code, rejected.body()))
    except TriggerRejected as rejected:
        logger.info("trigger refused", extra={"status_code": rejected.status_code, "reason": str(rejected)})
        return _json_response(TriggerResponse(rejected.status_code, rejected.body()))
    logger.info(
        "trigger answered",
        extra={"status_code": response.status_code, "job": job, "scheduled_time": response.body["scheduled_time"]},
    )
    return _json_response(response)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    observability.count_cold_start(context, metrics_namespace=metrics_namespace())
    job = (event.get("pathParameters") or {}).get("job")
    if event.get("routeKey") != ROUTE or not job:
        # Only a misconfigured API sends anything else here.
        logger.warning("no such route", extra={"route_key": event.get("routeKey")})
        return _json_response(
            TriggerResponse(404, {"error": f"no route {event.get('routeKey')!r}; this API has {ROUTE}"})
        )
    return post_tick(str(job), event)
