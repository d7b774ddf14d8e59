"""CloudFormation intrinsics (`Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join`...) resolved to the names
resources get locally."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template


@dataclass(frozen=True)
class LocalNames:
    """How the local runtime names resources: a table is named after its logical id."""

    region: str = "us-east-1"
    account_id: str = "123456789012"
    stack_name: str = "clockless-local"

    def table_name(self, logical_id: str) -> str:
        return logical_id

    def queue_name(self, logical_id: str) -> str:
        """A queue is named after its logical id too (its URL ends in it)."""
        return logical_id

    def function_name(self, logical_id: str) -> str:
        """The name the local runtime gives a function (its context's function_name)."""
        return f"{self.stack_name}-{logical_id}"


def resolve(value: Any, template: Template, names: LocalNames = LocalNames()) -> Any:
    """Resolve the intrinsics environment variables use (Ref, GetAtt, Join, Sub) for the local runtime."""
    if isinstance(value, (str, int, float, bool)):
        return str(value) if not isinstance(value, str) else value
    if isinstance(value, list):
        return [resolve(item, template, names) for item in value]
    if isinstance(value, Mapping) and len(value) == 1:
        ((name, argument),) = value.items()
        if name == "Ref":
            return _resolve_ref(str(argument), template, names)
        if name == "Fn::GetAtt":
            logical_id, attribute = argument
            return _resolve_get_att(logical_id, attribute, template, names)
        if name == "Fn::Join":
            delimiter, items = argument
            resolved = resolve(items, template, names)
            flat: list[str] = []
            for item in resolved:
                flat.extend(item if isinstance(item, list) else [item])
            return str(delimiter).join(flat)
        if name == "Fn::Sub":
            return _resolve_sub(argument, template, names)
    raise TemplateError(f"the local runtime cannot resolve {value!r}")


def _resolve_ref(name: str, template: Template, names: LocalNames) -> Any:
    pseudo = {
        "AWS::Region": names.region,
        "AWS::AccountId": names.account_id,
        "AWS::StackName": names.stack_name,
        "AWS::Partition": "aws",
    }
    if name in pseudo:
        return pseudo[name]
    if name in (template.document.get("Parameters") or {}):
        default = template.parameter_default(name)
        return [str(item) for item in default] if isinstance(default, list) else str(default)
    resource = template.resources.get(name)
    if resource is None:
        raise TemplateError(f"!Ref {name}: no such parameter or resource in template.yaml")
    if resource.get("Type") == "AWS::DynamoDB::Table":
        return names.table_name(name)
    if resource.get("Type") == "AWS::SQS::Queue":
        return f"http://localhost/{names.account_id}/{names.queue_name(name)}"
    return name


def _resolve_get_att(logical_id: str, attribute: str, template: Template, names: LocalNames) -> str:
    resource = template.resources.get(logical_id)
    if resource is None:
        raise TemplateError(f"!GetAtt {logical_id}.{attribute}: no such resource in template.yaml")
    kind = {"AWS::DynamoDB::Table": "dynamodb", "AWS::SQS::Queue": "sqs"}.get(str(resource.get("Type")), "local")
    if attribute == "Arn" and kind == "dynamodb":
        return f"arn:aws:dynamodb:{names.region}:{names.account_id}:table/{names.table_name(logical_id)}"
    if attribute == "Arn" and resource.get("Type") in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
        return f"arn:aws:lambda:{names.region}:{names.account_id}:function:{names.function_name(logical_id)}"
    if attribute == "Arn":
        return f"arn:aws:{kind}:{names.region}:{names.account_id}:{logical_id}"
    return logical_id


def _resolve_sub(argument: Any, template: Template, names: LocalNames) -> str:
    text, variables = (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])

    def substitute(match: re.Match[str]) -> str:
        token = match.group(1)
        if token in variables:
            return str(resolve(variables[token], template, names))
        if "." in token and not token.startswith("AWS::"):
            logical_id, attribute = token.split(".", 1)
            return _resolve_get_att(logical_id, attribute, template, names)
        resolved = _resolve_ref(token, template, names)
        return ",".join(resolved) if isinstance(resolved, list) else str(resolved)

    return re.sub(r"\$\{([^}!]+)\}", substitute, str(text))
