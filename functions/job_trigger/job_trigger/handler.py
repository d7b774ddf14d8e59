"""POST /jobs/{job}/ticks behind the HTTP API: thin handler over `logic.trigger_tick`."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths

from clockless.tick import utc_now
from job_trigger.logic import (
    SECRET_HEADER,
    TickRequest,
    TriggerRejected,
    TriggerResponse,
    Unauthorized,
    trigger_tick,
)
from job_trigger.repository import DynamoTickLedger, LambdaJobInvoker, SecretsManagerTriggerSecret
from job_trigger.settings import JobTriggerSettings

# Never log the event: its headers carry the secret.
logger = Logger(service="job-trigger")
app = APIGatewayHttpResolver()


@dataclass(frozen=True, slots=True)
class Dependencies:
    settings: JobTriggerSettings
    secret: SecretsManagerTriggerSecret
    ledger: DynamoTickLedger
    invoker: LambdaJobInvoker


@functools.cache
def dependencies() -> Dependencies:
    """Built on first use (cold start) from the environment; cached for the execution environment."""
    settings = JobTriggerSettings.from_env()
    return Dependencies(
        settings=settings,
        secret=SecretsManagerTriggerSecret(settings.secret_id, max_age_seconds=settings.secret_max_age_seconds),
        ledger=DynamoTickLedger(settings.ledger_table),
        invoker=LambdaJobInvoker(),
    )


def _json_response(response: TriggerResponse) -> Response[str]:
    return Response(
        status_code=response.status_code,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(response.body, sort_keys=True),
    )


@app.post("/jobs/<job>/ticks")
def post_tick(job: str) -> Response[str]:
    event = app.current_event
    deps = dependencies()
    request = TickRequest(
        job=job,
        presented_secret=event.headers.get(SECRET_HEADER),
        body=event.body,
        body_base64_encoded=bool(event.is_base64_encoded),
        request_id=event.request_context.request_id,
        now=utc_now(),
    )
    try:
        response = trigger_tick(
            request,
            secret=deps.secret,
            job_functions=deps.settings.job_functions,
            window=deps.settings.window,
            ledger=deps.ledger,
            invoker=deps.invoker,
        )
    except Unauthorized as rejected:
        logger.warning("trigger refused: no valid secret", extra={"source_ip": event.request_context.http.source_ip})
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
    return app.resolve(event, context)
