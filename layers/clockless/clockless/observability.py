"""What every invocation tells the operator besides its result: the Lambda context on each log
line, as Powertools' `inject_lambda_context` adds it, and a `ColdStart` metric.

Tracing is off on purpose (template.yaml sets no `Tracing`: Lambda's default passes traces on).
Powertools' `Tracer` needs the AWS X-Ray SDK in the layer: measured, it adds 1.9 MB to a 6.9 MB
layer and about 0.36x `import boto3` to every cold start (the jobs would go from ~1.3x to ~1.66x,
past the 1.5x target), and the X-Ray SDK has been in maintenance mode since 2026-02-25 (end of support
2027-02-25; AWS points to OpenTelemetry). A tick's path is one claim, a few queries and one
transaction, whose latency the ledger already records (`duration_ms`) and whose requests the
bench counts; the tick is the correlation id on every log line, so one tick's lines are one query
in CloudWatch Logs Insights. docs/observability.md says how to turn tracing on if that changes.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any, Final

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from clockless.config import env_optional

METRIC_COLD_START: Final = "ColdStart"
# Every log line's time as every other time of clockless reads: ISO-8601 in UTC with `Z`, to the
# millisecond (`2026-12-01T22:40:04.123Z`); Powertools' default is `2026-12-01 22:40:04,123+0000`.
# `%F` is Powertools' milliseconds directive.
LOG_TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%FZ"


class ExactTimeFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter with the record's own time.

    Its `formatTime` (aws-lambda-powertools 3.x, `use_datetime_directive=True` with a `datefmt`)
    formats `record.created + record.msecs / 1000`: `created` already holds the fraction of the
    second and `msecs` is in milliseconds, so a line logged at 12:00:00.750 is formatted from
    12:00:01.500 and reads `12:00:01.750`, one second late for every line in .500-.999 and out of
    order with the lines around it. docs/observability.md has the report for upstream."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        datefmt = datefmt or self.datefmt
        if self.use_rfc3339_iso8601 or not (self.use_datetime_directive and datefmt):
            return super().formatTime(record, datefmt)
        moment = datetime.fromtimestamp(record.created, tz=UTC)
        if not self.utc:
            moment = moment.astimezone()
        return moment.strftime(datefmt.replace(self.custom_ms_time_directive, f"{int(record.msecs):03d}"))


def service_logger(service: str) -> Logger:
    """The Powertools logger of a function or job, its times in ISO-8601 UTC (`LOG_TIME_FORMAT`)."""
    formatter = ExactTimeFormatter(datefmt=LOG_TIME_FORMAT, use_datetime_directive=True, utc=True)
    return Logger(service=service, logger_formatter=formatter)


# Set by Lambda for provisioned concurrency: its initialisation happens before any request.
_INITIALIZATION_TYPE: Final = "AWS_LAMBDA_INITIALIZATION_TYPE"


def lambda_context_keys(context: Any) -> dict[str, Any]:
    """The keys `Logger.inject_lambda_context` adds, read from a Lambda context (or any object
    with the same attributes); absent attributes are left out rather than logged as null."""
    keys = {
        "function_name": getattr(context, "function_name", None),
        "function_memory_size": getattr(context, "memory_limit_in_mb", None),
        "function_arn": getattr(context, "invoked_function_arn", None),
        "function_request_id": getattr(context, "aws_request_id", None),
    }
    return {key: value for key, value in keys.items() if value is not None}


class ColdStart:
    """True for the first invocation an execution environment serves, then False.

    One per function (a Lambda process serves one function; the local runtime may host several),
    and thread-safe: concurrent deliveries in the simulator must not both count as the first.
    """

    def __init__(self) -> None:
        self._cold = env_optional(_INITIALIZATION_TYPE) != "provisioned-concurrency"
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            cold, self._cold = self._cold, False
            return cold


class Observability:
    """One per function: `invocation` at the start of each invocation, before anything is logged."""

    def __init__(self, logger: Logger, *, service: str) -> None:
        self.logger = logger
        self.service = service
        self.cold_start = ColdStart()

    def invocation(self, context: Any, *, metrics_namespace: str) -> bool:
        """Put the Lambda context and `cold_start` on the logger's keys for this invocation (the
        caller clears them with `thread_safe_clear_keys`), and on a cold start emit `ColdStart`
        with dimensions `function_name` and `service`, as Powertools' `capture_cold_start_metric`
        does. `xray_trace_id` needs nothing here: Powertools' formatter reads it from
        `_X_AMZN_TRACE_ID`, which Lambda sets on every invocation, traced or not.
        Returns whether this invocation was a cold start."""
        cold = self.cold_start.take()
        keys = lambda_context_keys(context)
        self.logger.thread_safe_append_keys(cold_start=cold, **keys)
        if cold:
            self._emit_cold_start(keys.get("function_name"), metrics_namespace)
        return cold

    def count_cold_start(self, context: Any, *, metrics_namespace: str) -> bool:
        """The metric alone, for a handler whose logger already gets the context from
        `inject_lambda_context` (the HTTP trigger). Returns whether this was a cold start."""
        cold = self.cold_start.take()
        if cold:
            self._emit_cold_start(lambda_context_keys(context).get("function_name"), metrics_namespace)
        return cold

    def _emit_cold_start(self, function_name: str | None, metrics_namespace: str) -> None:
        name = function_name or env_optional("AWS_LAMBDA_FUNCTION_NAME") or self.service
        with single_metric(
            name=METRIC_COLD_START, unit=MetricUnit.Count, value=1, namespace=metrics_namespace
        ) as metric:
            metric.add_dimension(name="function_name", value=str(name))
            metric.add_dimension(name="service", value=self.service)
