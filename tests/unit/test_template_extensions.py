"""The tools read template.yaml after `AWS::LanguageExtensions`, expanded as CloudFormation documents it
(the examples below are the ones on the Fn::ForEach, Fn::FindInMap enhancements, Fn::Length and
Fn::ToJsonString pages of the CloudFormation Template Reference), and the job declaration writes out
exactly the resources the template had before each job was declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from clockless_tools.template.extensions import expand
from clockless_tools.template.loader import TemplateError, _CfnLoader, load_yaml
from clockless_tools.template.model import Template
from clockless_tools.template.render import render

LE = {"AWSTemplateFormatVersion": "2010-09-09", "Transform": "AWS::LanguageExtensions"}
BEFORE = Path(__file__).resolve().parents[1] / "fixtures" / "declaration" / "template-before-declaration.yaml"


def _expand(**sections: Any) -> dict[str, Any]:
    return expand({**LE, **sections})


def test_a_loop_over_a_list_parameter_writes_one_resource_per_item_and_refs_to_the_identifier() -> None:
    # The SNS example: the collection is a Ref to a CommaDelimitedList, {"Ref": TopicName} the item.
    document = _expand(
        Parameters={"pRepoARNs": {"Type": "CommaDelimitedList", "Default": "Success,Failure"}},
        Resources={
            "Fn::ForEach::Topics": [
                "TopicName",
                {"Ref": "pRepoARNs"},
                {
                    "SnsTopic${TopicName}": {
                        "Type": "AWS::SNS::Topic",
                        "Properties": {"TopicName": {"Fn::Join": [".", [{"Ref": "TopicName"}, "fifo"]]}},
                    }
                },
            ]
        },
    )

    assert document["Resources"] == {
        "SnsTopicSuccess": {
            "Type": "AWS::SNS::Topic",
            "Properties": {"TopicName": {"Fn::Join": [".", ["Success", "fifo"]]}},
        },
        "SnsTopicFailure": {
            "Type": "AWS::SNS::Topic",
            "Properties": {"TopicName": {"Fn::Join": [".", ["Failure", "fifo"]]}},
        },
    }


def test_nested_loops_in_outputs_resolve_getatt_of_a_sub_and_a_ref() -> None:
    document = _expand(
        Resources={},
        Outputs={
            "Fn::ForEach::BucketOutputs": [
                "Identifier",
                ["A", "B"],
                {
                    "Fn::ForEach::GetAttLoop": [
                        "Property",
                        ["Arn", "DomainName"],
                        {
                            "S3Bucket${Identifier}${Property}": {
                                "Value": {"Fn::GetAtt": [{"Fn::Sub": "S3Bucket${Identifier}"}, {"Ref": "Property"}]}
                            }
                        },
                    ]
                },
            ]
        },
    )

    assert document["Outputs"]["S3BucketBDomainName"] == {"Value": {"Fn::GetAtt": ["S3BucketB", "DomainName"]}}
    assert len(document["Outputs"]) == 4


def test_an_ampersand_identifier_drops_the_non_alphanumeric_characters() -> None:
    document = _expand(
        Resources={
            "Fn::ForEach::Subnets": [
                "CIDR",
                ["10.0.2.0/24", "10.0.3.0/24"],
                {"Subnet&{CIDR}": {"Type": "AWS::EC2::Subnet", "Properties": {"CidrBlock": "${CIDR}"}}},
            ]
        }
    )

    assert document["Resources"]["Subnet1002024"]["Properties"] == {"CidrBlock": "10.0.2.0/24"}


def test_find_in_map_returns_the_value_or_its_default_and_refuses_a_missing_key_without_one() -> None:
    mappings = {"Jobs": {"Nightly": {"Grace": 120}}}
    found = _expand(
        Mappings=mappings,
        Resources={
            "R": {
                "Type": "T",
                "Properties": {
                    "Grace": {"Fn::FindInMap": ["Jobs", "Nightly", "Grace"]},
                    "Budget": {"Fn::FindInMap": ["Jobs", "Nightly", "Budget", {"DefaultValue": 30}]},
                },
            }
        },
    )
    assert found["Resources"]["R"]["Properties"] == {"Grace": 120, "Budget": 30}

    with pytest.raises(TemplateError, match=r"Fn::FindInMap \[Jobs, Hourly, Grace\]: map Jobs has no Hourly.Grace"):
        _expand(
            Mappings=mappings,
            Resources={"R": {"Type": "T", "Properties": {"G": {"Fn::FindInMap": ["Jobs", "Hourly", "Grace"]}}}},
        )


def test_length_and_to_json_string_of_literal_values() -> None:
    document = _expand(
        Resources={
            "R": {
                "Type": "T",
                "Properties": {
                    "Count": {"Fn::Length": ["a", "b", "c"]},
                    "Json": {"Fn::ToJsonString": {"key": "value", "list": [1, 2]}},
                    "Later": {"Fn::ToJsonString": {"arn": {"Ref": "Topic"}}},
                },
            }
        }
    )

    properties = document["Resources"]["R"]["Properties"]
    assert properties["Count"] == 3
    assert properties["Json"] == '{"key":"value","list":[1,2]}'
    # What depends on the deployment is CloudFormation's to resolve.
    assert properties["Later"] == {"Fn::ToJsonString": {"arn": {"Ref": "Topic"}}}


def test_a_loop_that_writes_an_existing_logical_id_is_refused() -> None:
    with pytest.raises(TemplateError, match="generates keys that already exist: TopicA"):
        _expand(
            Resources={
                "TopicA": {"Type": "AWS::SNS::Topic"},
                "Fn::ForEach::Topics": ["Name", ["A"], {"Topic${Name}": {"Type": "AWS::SNS::Topic"}}],
            }
        )


def test_loops_nested_deeper_than_cloudformation_allows_are_refused() -> None:
    fragment: dict[str, Any] = {"R${L6}": {"Type": "T"}}
    for depth in range(6, 0, -1):
        fragment = {f"Fn::ForEach::Loop{depth}": [f"L{depth}", ["x"], fragment]}
    with pytest.raises(TemplateError, match="nested 6 deep; CloudFormation allows 5"):
        _expand(Resources=fragment)


def test_a_template_without_the_transform_is_read_as_written() -> None:
    document = {"Resources": {"Fn::ForEach::Topics": ["N", ["A"], {"T${N}": {"Type": "T"}}]}}

    assert expand(document) == document


# ---------------------------------------------------------------------------------------------- the project
def _normalised(document: dict[str, Any]) -> dict[str, Any]:
    """What the declaration changed on purpose, undone, so the rest must be equal (docs/decisions.md)."""
    resources = {key: value for key, value in document["Resources"].items() if not key.endswith("TablesPolicy")}
    globals_env = document["Globals"]["Function"]["Environment"]["Variables"]
    for logical_id, resource in resources.items():
        properties = resource.get("Properties") or {}
        if resource["Type"] == "AWS::Serverless::Function":
            events = properties.get("Events") or {}
            if len(events) == 1 and next(iter(events)) in ("Nightly", "Hourly", "Schedule"):
                properties["Events"] = {"Schedule": next(iter(events.values()))}
            _drop_declared_variables(logical_id, properties, globals_env)
            for name in ("Runtime", "MemorySize"):
                properties.pop(name, None)
            if properties.get("Timeout") == 120:
                properties.pop("Timeout")
            policies = properties.get("Policies") or []
            statements = [s for policy in policies if isinstance(policy, dict) for s in policy.get("Statement", [])]
            for statement in statements:
                _undo_overlap_grants(statement)
                # Rule least-privilege since: ConditionCheckItem only where code checks (the kit, on the ledger).
                if "LedgerTable" not in str(statement.get("Resource")) and isinstance(statement.get("Action"), list):
                    statement["Action"] = [a for a in statement["Action"] if a != "dynamodb:ConditionCheckItem"]
            properties["Policies"] = sorted(statements, key=lambda statement: str(statement.get("Sid")))
            clockless = (resource.get("Metadata") or {}).get("clockless") or {}
            clockless.pop("tables", None)
            # A job's LocalTime (docs/time-zones.md) is new since the fixture; the examples declare none.
            if clockless.get("local_time") == "none":
                clockless.pop("local_time")
            if clockless.get("local_time_rule") == "not_before=04:00,same_local_date":
                clockless["local_time_rule"] = {"not_before": "04:00", "same_local_date": True}
        if resource["Type"] == "AWS::CloudWatch::Alarm" and isinstance(properties.get("Threshold"), str):
            properties["Threshold"] = int(properties["Threshold"])
        _undo_failed_partition_backoff(logical_id, resource)
    return resources


def _undo_overlap_grants(statement: dict[str, Any]) -> None:
    """Since the fixture: the ledger calls of an overlap policy granted only to a job that declares
    it (Mappings OverlapGrants); the fixture granted every job a skip and buffer job's."""
    if statement.get("Sid") == "RunLedger":
        statement["Action"] = ["dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:PutItem"]
        statement["Action"].append("dynamodb:ConditionCheckItem")
    if statement.get("Sid") == "BufferedTickLastSuccess":
        statement["Effect"] = "Allow"


def _drop_declared_variables(logical_id: str, properties: dict[str, Any], globals_env: dict[str, Any]) -> None:
    """The variables the declaration writes per function that the fixture did not have."""
    variables = (properties.get("Environment") or {}).get("Variables") or {}
    for name in list(variables):
        if name in globals_env and variables[name] == globals_env[name]:
            del variables[name]  # Globals' value restated (a job's zones, defaulting to the stack's)
            continue
        if name in globals_env or logical_id == "JobTriggerFunction":
            continue
        if (
            name.endswith("_TABLE_NAME")
            or name in ("OPERATING_TIME_ZONES", "LOCAL_TIME", "LOCAL_TICK_GRACE_MINUTES", "WORK_MAX_RECEIVES")
            or name.startswith("EMPTY_SESSION")
        ):
            del variables[name]


def _undo_failed_partition_backoff(logical_id: str, resource: dict[str, Any]) -> None:
    """Since the fixture: a failed partition message's backoff (ChangeMessageVisibility, docs/fan-out.md),
    and the graces it grew (rule dead-man-alarm), with the dead-man alarms' ranges and descriptions."""
    properties = resource.get("Properties") or {}
    for statement in properties.get("Policies") or []:
        if isinstance(statement, dict) and isinstance(statement.get("Action"), list):
            statement["Action"] = [a for a in statement["Action"] if a != "sqs:ChangeMessageVisibility"]
    ((resource.get("Metadata") or {}).get("clockless") or {}).pop("grace_minutes", None)
    if logical_id.endswith("DeadManAlarm"):
        for name in ("EvaluationPeriods", "DatapointsToAlarm", "AlarmDescription"):
            properties.pop(name, None)


def test_the_declared_jobs_write_out_the_resources_the_template_had_before(template: Template) -> None:
    # Migration proof: the template before the jobs were declared once (main at the merge) against the
    # expansion of today's. Every resource the loops write had the same logical id, type and
    # properties before, once the intended changes are undone (event id Schedule, the jobs' tables
    # in Globals and a TablesPolicy, Runtime, Threshold, a page per job). Resources written out by hand (tables,
    # topic, keys) go on changing on their own, so only the loops' output is held to the fixture.
    before = load_yaml(BEFORE.read_text(encoding="utf-8"), source=str(BEFORE))
    after = _expanded_with_policies(template)
    raw = yaml.load(template.path.read_text(encoding="utf-8"), Loader=_CfnLoader)
    written_by_hand = {key for key in raw["Resources"] if not key.startswith("Fn::ForEach::")}
    # New on purpose: a job's TablesPolicy, its own dashboard page (the shared page held every job's lines),
    # its ItemsFailed alarm (items that failed alone, docs/tick-contract.md) and its LocalTickMissed alarm
    # (a zone of a LocalTime job, docs/time-zones.md).
    new_on_purpose = ("TablesPolicy", "Dashboard", "ItemsFailedAlarm", "LocalTickMissedAlarm")
    looped = {key for key in after["Resources"] if key not in written_by_hand and not key.endswith(new_on_purpose)}

    # The jobs the fixture had (a job added since has nothing to be compared with): every resource of
    # theirs is written out again.
    stems = tuple(before.get("Mappings", {}).get("Jobs", {})) or _stems_of(before)
    looped = {key for key in looped if key.startswith(stems)}
    missing = sorted(k for k in before["Resources"] if k.startswith(stems) and k not in after["Resources"])

    assert looped, "the template's loops wrote no resource"
    assert missing == [], f"the loops no longer write {missing}"
    assert {k: after["Resources"][k]["Type"] for k in looped} == {
        k: v["Type"] for k, v in before["Resources"].items() if k in looped
    }
    assert _normalised(_only(after, looped)) == _normalised(_only(before, looped))


def _stems_of(document: dict[str, Any]) -> tuple[str, ...]:
    """The jobs' resource stems of a template written out by hand: its scheduled functions' ids."""
    return tuple(
        key.removesuffix("Function")
        for key, resource in document["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
        and any(e.get("Type") == "ScheduleV2" for e in (resource["Properties"].get("Events") or {}).values())
    )


def _only(document: dict[str, Any], logical_ids: set[str]) -> dict[str, Any]:
    return {**document, "Resources": {k: v for k, v in document["Resources"].items() if k in logical_ids}}


def _expanded_with_policies(template: Template) -> dict[str, Any]:
    """The expanded document, each function's Policies as the model reads them (managed policies inlined)."""
    import copy

    document = copy.deepcopy(dict(template.document))
    for logical_id, fn in template.functions.items():
        document["Resources"][logical_id]["Properties"]["Policies"] = copy.deepcopy(fn.properties.get("Policies"))
    return document


def test_the_expanded_template_renders_to_yaml_that_reads_back_the_same(template: Template) -> None:
    rendered = load_yaml(render(template.document))

    assert rendered["Resources"] == template.document["Resources"]
    assert rendered["Outputs"] == template.document["Outputs"]
