"""TickSucceeded carries the tick's trigger, and the dead-man alarms watch exactly the scheduled series."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.metrics import EphemeralMetrics

from clockless import JobRun, ScheduledJob, Tick, Trigger
from clockless_tools.local.runtime import LocalLambdaContext
from clockless_tools.template.model import Template

TICK_TIME = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)


@pytest.fixture
def kit_env(tables: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", "IdempotencyTable")
    monkeypatch.setenv("IDEMPOTENCY_EXPIRY_SECONDS", "3600")
    monkeypatch.setenv("LEDGER_TABLE_NAME", "LedgerTable")
    monkeypatch.setenv("LEDGER_RETENTION_DAYS", "30")
    return tables


def _success_dimensions(output: str) -> dict[str, str]:
    """The dimensions of the TickSucceeded datapoint in Powertools' EMF output."""
    for line in output.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            if any(metric["Name"] == "TickSucceeded" for metric in directive["Metrics"]):
                (names,) = directive["Dimensions"]
                return {name: document[name] for name in names}
    raise AssertionError(f"no TickSucceeded datapoint in:\n{output}")


@pytest.mark.parametrize("trigger", list(Trigger))
def test_success_is_counted_per_trigger(kit_env: Any, capsys: pytest.CaptureFixture[str], trigger: Trigger) -> None:
    job = ScheduledJob(f"metric-{trigger.value}")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {}

    tick = Tick(job.name, TICK_TIME, "arn:aws:scheduler:::schedule/g/x", 1, "exec-1", trigger)
    context = LocalLambdaContext("fn", 512, 60, "arn:aws:lambda:us-east-1:1:function:fn")
    handler(tick.to_event(), context)

    dimensions = _success_dimensions(capsys.readouterr().out)

    assert dimensions == {"service": job.name, "job": job.name, "trigger": trigger.value}


def test_the_dead_man_alarms_select_the_scheduled_series_the_kit_emits(template: Template) -> None:
    alarms = template.resources_of_type("AWS::CloudWatch::Alarm")
    watched = []
    for alarm in alarms.values():
        for query in (alarm.get("Properties") or {}).get("Metrics") or []:
            metric = (query.get("MetricStat") or {}).get("Metric") or {}
            if metric.get("MetricName") == "TickSucceeded":
                watched.append({d["Name"]: d["Value"] for d in metric["Dimensions"]})

    # CloudWatch matches a metric only on its full dimension set: the alarm must name all three.
    assert sorted(d["job"] for d in watched) == sorted(template.jobs)
    assert all(set(d) == {"service", "job", "trigger"} and d["trigger"] == Trigger.SCHEDULE.value for d in watched)


class AttemptDied(BaseException):
    """The attempt killed (a timeout, an out-of-memory kill): nothing after it runs."""


def _successes(output: str) -> int:
    """TickSucceeded datapoints in Powertools' EMF output."""
    count = 0
    for line in output.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            document = json.loads(line)
            names = [m["Name"] for d in document["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]]
            if "TickSucceeded" in names:
                value = document["TickSucceeded"]
                count += int(sum(value)) if isinstance(value, list) else int(value)
    return count


# the killed attempt's flush finds no metric left to publish
@pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
def test_an_attempt_dying_after_its_completion_still_has_its_success_reported_once_by_lambdas_retry(
    kit_env: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a job without fan-out whose first attempt dies right after its completion was applied,
    # before TickSucceeded is out
    job = ScheduledJob("metric-after-death")

    @job.handler
    def handler(run: JobRun) -> dict[str, Any]:
        return {"done": 1}

    add_metric = EphemeralMetrics.add_metric
    deaths: list[str] = []

    def dying(self: EphemeralMetrics, name: str, *args: Any, **kwargs: Any) -> None:
        if name == "TickSucceeded" and not deaths:
            deaths.append(name)
            raise AttemptDied
        add_metric(self, name, *args, **kwargs)

    monkeypatch.setattr(EphemeralMetrics, "add_metric", dying)
    event = Tick(job.name, TICK_TIME, "arn:aws:scheduler:::schedule/g/x", 1, "exec-1", Trigger.SCHEDULE).to_event()
    # Lambda retries the failed attempt with the same request id.
    attempt = LocalLambdaContext("fn", 512, 60, "arn:aws:lambda:us-east-1:1:function:fn")
    with pytest.raises(AttemptDied):
        handler(event, attempt)
    assert _successes(capsys.readouterr().out) == 0

    # WHEN Lambda retries it, and later the scheduler's own copy of the tick arrives (a new request)
    retried = handler(event, attempt)
    retry_output = capsys.readouterr().out
    copy = handler(event, LocalLambdaContext("fn", 512, 60, "arn:aws:lambda:us-east-1:1:function:fn"))

    # THEN both are duplicates; the retry reports the success, the unrelated copy does not
    assert (retried["outcome"], copy["outcome"]) == ("duplicate", "duplicate")
    assert _successes(retry_output) == 1
    assert _successes(capsys.readouterr().out) == 0
