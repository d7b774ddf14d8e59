"""The checkov skip list's reasons say what the template does; each claim a reason makes about it is
checked here against the template, so a change that makes a reason untrue fails."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from clockless_tools.security.scan import Skip, load_skips
from clockless_tools.template.loader import PROJECT_ROOT
from clockless_tools.template.model import Template


def _reason(check: str) -> str:
    (skip,) = [s for s in load_skips() if s.check == check]
    assert isinstance(skip, Skip)
    return " ".join(skip.reason.split())


def _statements(template: Template) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every Allow statement of every function's policies, by function."""
    for logical_id, fn in template.functions.items():
        for policy in fn.prop("Policies") or []:
            if isinstance(policy, Mapping):
                for statement in policy.get("Statement") or []:
                    if isinstance(statement, Mapping) and statement.get("Effect", "Allow") == "Allow":
                        yield logical_id, statement


def _actions(statement: Mapping[str, Any]) -> list[Any]:
    actions = statement.get("Action")
    return actions if isinstance(actions, list) else [actions]


def test_the_log_groups_reason_names_every_field_that_records_the_caller() -> None:
    template = Template.load()
    reason = _reason("CKV_AWS_158")
    api = next(iter(template.resources_of_type("AWS::Serverless::HttpApi").values()))
    access_log = json.loads(api["Properties"]["AccessLogSettings"]["Format"])
    callers = sorted(field for field, value in access_log.items() if "$context.identity." in value)

    assert callers == ["sourceIp"]
    assert all(f"({field}, per request)" in reason for field in callers)
    handler = (PROJECT_ROOT / "functions/job_trigger/job_trigger/handler.py").read_text(encoding="utf-8")
    logged = sorted(set(re.findall(r'"(\w*ip\w*)":', handler)))
    assert logged == ["source_ip"]
    assert "(source_ip, on a request refused for its secret)" in reason


def test_the_log_groups_reason_states_their_retention() -> None:
    template = Template.load()
    groups = template.resources_of_type("AWS::Logs::LogGroup")

    assert groups
    for logical_id, group in groups.items():
        assert group["Properties"].get("RetentionInDays") == {"Ref": "LogRetentionInDays"}, logical_id
    default = template.document["Parameters"]["LogRetentionInDays"]["Default"]
    assert f"LogRetentionInDays (default {default})" in _reason("CKV_AWS_158")


def test_the_secrets_reason_names_every_role_allowed_to_read_it() -> None:
    template = Template.load()
    readers = {
        logical_id: statement.get("Resource")
        for logical_id, statement in _statements(template)
        for action in _actions(statement)
        if isinstance(action, str) and action.lower() in ("secretsmanager:getsecretvalue", "secretsmanager:*", "*")
    }
    other_policies = [
        logical_id
        for kind in ("AWS::IAM::Role", "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        for logical_id, resource in template.resources_of_type(kind).items()
        if "secretsmanager" in json.dumps(resource).lower()
    ]

    assert readers == {"JobTriggerFunction": {"Ref": "TriggerSecret"}}
    assert other_policies == []
    reason = _reason("CKV_AWS_149")
    assert "only JobTriggerFunction's is allowed it, on this one secret" in reason
    # With the AWS managed key, IAM alone decides: the reason must not claim the key narrows readers.
    assert "any principal of the account whose IAM policies allow secretsmanager:GetSecretValue" in reason
    # And it must not claim a customer key would narrow nothing: AWS then also asks kms:Decrypt on it.
    assert "no narrower access" not in reason
    assert "kms:Decrypt" in reason
