"""template.yaml as the single source of truth for the local runtime, the simulator and the rules."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from clockless_tools.schedule import ScheduleExpressionError, ScheduleSpec

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TEMPLATE = PROJECT_ROOT / "template.yaml"

_SHORT_FORMS = {
    "Ref": "Ref",
    "Condition": "Condition",
    "GetAtt": "Fn::GetAtt",
}


class TemplateError(ValueError):
    """template.yaml is unreadable or lacks something the tools rely on; the message says where."""


class ScheduleDefinitionError(TemplateError, ScheduleExpressionError):
    """A schedule in template.yaml cannot be evaluated; the message names the function and event."""


class _CfnLoader(yaml.SafeLoader):
    """YAML loader that turns CloudFormation short forms (!Ref, !Sub, ...) into their long forms."""


def _construct_intrinsic(loader: _CfnLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = _SHORT_FORMS.get(tag_suffix, f"Fn::{tag_suffix}")
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if name == "Fn::GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_intrinsic)


def load_yaml(text: str, *, source: str = "template.yaml") -> dict[str, Any]:
    try:
        document = yaml.load(text, Loader=_CfnLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        raise TemplateError(f"{source}: not valid YAML: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise TemplateError(f"{source}: has no Resources mapping")
    return document


@dataclass(frozen=True)
class Schedule:
    function_id: str
    event_id: str
    properties: Mapping[str, Any]

    @property
    def expression(self) -> str:
        return str(self.properties.get("ScheduleExpression", ""))

    @property
    def timezone(self) -> str | None:
        value = self.properties.get("ScheduleExpressionTimezone")
        return None if value is None else str(value)

    @property
    def input_text(self) -> str | None:
        value = self.properties.get("Input")
        return value if isinstance(value, str) else None

    def input(self) -> dict[str, Any]:
        """The `Input` JSON with the scheduler's placeholders still in it."""
        text = self.input_text
        if text is None:
            raise TemplateError(f"{self.function_id}.Events.{self.event_id}: schedule has no literal Input")
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise TemplateError(f"{self.function_id}.Events.{self.event_id}: Input is not JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise TemplateError(f"{self.function_id}.Events.{self.event_id}: Input must be a JSON object")
        return parsed

    @property
    def job(self) -> str:
        job = self.input().get("job")
        if not isinstance(job, str):
            raise TemplateError(f'{self.function_id}.Events.{self.event_id}: Input has no "job"')
        return job

    def spec(self, template: Template | None = None, *, created: datetime | None = None) -> ScheduleSpec:
        """The tick engine's view of this schedule. `template` resolves a StartDate/EndDate given
        as `!Ref Parameter` to the parameter's default; `created` anchors a rate() without StartDate."""
        properties = dict(self.properties)
        for name in ("ScheduleExpressionTimezone", "StartDate", "EndDate"):
            value = properties.get(name)
            if template is not None and isinstance(value, Mapping) and set(value) == {"Ref"}:
                properties[name] = template.parameter_default(str(value["Ref"]))
        try:
            return ScheduleSpec.from_properties(properties, created=created)
        except ScheduleExpressionError as error:
            raise ScheduleDefinitionError(f"{self.function_id}.Events.{self.event_id}: {error}") from None

    @property
    def retry_max_event_age(self) -> int | None:
        policy = self.properties.get("RetryPolicy")
        if not isinstance(policy, Mapping) or "MaximumEventAgeInSeconds" not in policy:
            return None
        return int(policy["MaximumEventAgeInSeconds"])


@dataclass(frozen=True)
class Function:
    logical_id: str
    properties: Mapping[str, Any]
    globals: Mapping[str, Any]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def prop(self, name: str, default: Any = None) -> Any:
        if name in self.properties:
            return self.properties[name]
        return self.globals.get(name, default)

    @property
    def code_uri(self) -> str:
        return str(self.prop("CodeUri", ""))

    @property
    def handler(self) -> str:
        return str(self.prop("Handler", ""))

    @property
    def timeout(self) -> int:
        return int(self.prop("Timeout", 3))

    @property
    def memory_size(self) -> int:
        return int(self.prop("MemorySize", 128))

    @property
    def layers(self) -> list[Any]:
        return list(self.globals.get("Layers", [])) + list(self.properties.get("Layers", []))

    @property
    def environment(self) -> dict[str, Any]:
        """Globals' variables overlaid with the function's own, unresolved, as SAM merges them."""
        merged: dict[str, Any] = {}
        for source in (self.globals, self.properties):
            variables = (source.get("Environment") or {}).get("Variables") or {}
            merged.update(variables)
        return merged

    @property
    def event_invoke_config(self) -> Mapping[str, Any]:
        value = self.properties.get("EventInvokeConfig") or self.globals.get("EventInvokeConfig") or {}
        return value if isinstance(value, Mapping) else {}

    @property
    def schedules(self) -> list[Schedule]:
        events = self.properties.get("Events") or {}
        return [
            Schedule(function_id=self.logical_id, event_id=event_id, properties=event.get("Properties") or {})
            for event_id, event in events.items()
            if isinstance(event, Mapping) and event.get("Type") in ("ScheduleV2", "Schedule")
        ]

    @property
    def package_dir(self) -> str:
        """The function's package inside its CodeUri: the first part of `Handler`."""
        return self.handler.split(".", 1)[0]


@dataclass(frozen=True)
class Template:
    path: Path
    document: Mapping[str, Any]

    @classmethod
    def load(cls, path: Path | str = DEFAULT_TEMPLATE) -> Template:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise TemplateError(f"{path}: cannot read template: {error.strerror}") from None
        return cls(path=path, document=load_yaml(text, source=str(path)))

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def resources(self) -> Mapping[str, Mapping[str, Any]]:
        return self.document["Resources"]  # type: ignore[no-any-return]

    @property
    def function_globals(self) -> Mapping[str, Any]:
        return (self.document.get("Globals") or {}).get("Function") or {}

    def resources_of_type(self, resource_type: str) -> dict[str, Mapping[str, Any]]:
        return {
            logical_id: resource
            for logical_id, resource in self.resources.items()
            if isinstance(resource, Mapping) and resource.get("Type") == resource_type
        }

    @property
    def functions(self) -> dict[str, Function]:
        return {
            logical_id: Function(
                logical_id=logical_id,
                properties=resource.get("Properties") or {},
                globals=self.function_globals,
                metadata=resource.get("Metadata") or {},
            )
            for logical_id, resource in self.resources_of_type("AWS::Serverless::Function").items()
        }

    def function(self, logical_id: str) -> Function:
        functions = self.functions
        if logical_id not in functions:
            known = ", ".join(sorted(functions)) or "none"
            raise TemplateError(f"unknown function {logical_id!r} (template.yaml declares: {known})")
        return functions[logical_id]

    @property
    def scheduled_functions(self) -> dict[str, Function]:
        return {logical_id: fn for logical_id, fn in self.functions.items() if fn.schedules}

    def function_for_job(self, job: str) -> Function:
        for fn in self.scheduled_functions.values():
            if any(schedule.job == job for schedule in fn.schedules):
                return fn
        known = ", ".join(sorted(self.jobs)) or "none"
        raise TemplateError(f"unknown job {job!r} (template.yaml schedules: {known})")

    @property
    def jobs(self) -> dict[str, Schedule]:
        return {schedule.job: schedule for fn in self.scheduled_functions.values() for schedule in fn.schedules}

    @property
    def tables(self) -> dict[str, Mapping[str, Any]]:
        return {
            logical_id: resource.get("Properties") or {}
            for logical_id, resource in self.resources_of_type("AWS::DynamoDB::Table").items()
        }

    def tables_of_kind(self, *kinds: str) -> list[str]:
        """Logical ids of the tables whose `Metadata: clockless: kind` is one of `kinds`."""
        found = []
        for logical_id, resource in self.resources_of_type("AWS::DynamoDB::Table").items():
            clockless = (resource.get("Metadata") or {}).get("clockless") or {}
            if isinstance(clockless, Mapping) and clockless.get("kind") in kinds:
                found.append(logical_id)
        return found

    def layer_content_uri(self, layer_ref: Any) -> str | None:
        """The ContentUri of a layer referenced with !Ref to a layer in this template."""
        if isinstance(layer_ref, Mapping) and "Ref" in layer_ref:
            resource = self.resources.get(layer_ref["Ref"]) or {}
            if resource.get("Type") == "AWS::Serverless::LayerVersion":
                return str((resource.get("Properties") or {}).get("ContentUri"))
        return None

    def parameter_default(self, name: str) -> Any:
        parameters = self.document.get("Parameters") or {}
        if name not in parameters:
            raise TemplateError(f"template.yaml references parameter {name!r}, which it does not declare")
        parameter = parameters[name]
        default = parameter.get("Default")
        if default is None:
            raise TemplateError(f"parameter {name!r} has no Default; the local runtime needs one")
        if parameter.get("Type") == "CommaDelimitedList":
            return [item.strip() for item in str(default).split(",")]
        return default


@dataclass(frozen=True)
class LocalNames:
    """How the local runtime names resources: a table is named after its logical id."""

    region: str = "us-east-1"
    account_id: str = "123456789012"
    stack_name: str = "clockless-local"

    def table_name(self, logical_id: str) -> str:
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
        return f"http://localhost/{names.account_id}/{name}"
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
