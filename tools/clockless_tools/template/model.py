"""template.yaml as the single source of truth for the local runtime, the simulator and the rules: its
functions, their schedules, tables and queues."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from clockless.schedule.expressions import ScheduleExpressionError, ScheduleSpec
from clockless.schedule.local_clock import NO_LOCAL_TIME, LocalClock, LocalClockError
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError, load_yaml
from clockless_tools.template.queues import EVENT_SOURCE_MAPPING_TYPE, QUEUE_TYPE, EventSourceMapping, Queue

# `Metadata: clockless: worker_of: <Function>` on a function that applies another's fanned-out ticks.
WORKER_OF_KEY = "worker_of"
TABLES_KEY = "tables"
# `Metadata: clockless: local_time: "07:30"` (Mappings.Jobs.<Id>.LocalTime): the job's ticks are
# that time in one of its `operating_time_zones` (clockless.schedule.local_clock).
LOCAL_TIME_KEY = "local_time"
OPERATING_ZONES_KEY = "operating_time_zones"


class ScheduleDefinitionError(TemplateError, ScheduleExpressionError):
    """A schedule in template.yaml cannot be evaluated; the message names the function and event."""


@dataclass(frozen=True)
class Schedule:
    function_id: str
    event_id: str
    properties: Mapping[str, Any]
    # The function's `Metadata: clockless` block: its local time and zones, when it declares them.
    declared: Mapping[str, Any] = field(default_factory=dict)

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
            return ScheduleSpec.from_properties(properties, created=created, local_clock=self.local_clock(template))
        except ScheduleExpressionError as error:
            raise ScheduleDefinitionError(f"{self.function_id}.Events.{self.event_id}: {error}") from None

    @property
    def local_time(self) -> str | None:
        """The local time its function declares (`Metadata: clockless: local_time`), or None."""
        value = self.declared.get(LOCAL_TIME_KEY)
        return None if value is None or value == NO_LOCAL_TIME else str(value)

    def local_clock(self, template: Template | None = None) -> LocalClock | None:
        """The local time its ticks keep in the function's zones; None when it declares none.
        `template` resolves zones given as `!Ref Parameter` to the parameter's default."""
        where = f"{self.function_id}.Metadata.clockless.{LOCAL_TIME_KEY}"
        value = self.declared.get(LOCAL_TIME_KEY)
        if value is None or value == NO_LOCAL_TIME:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            # YAML 1.1 reads an unquoted 07:30 as the base-60 integer 450.
            raise ScheduleDefinitionError(f'{where}: {value!r} is a number; quote the time, e.g. "07:30"')
        zones: Any = self.declared.get(OPERATING_ZONES_KEY)
        if isinstance(zones, Mapping) and set(zones) == {"Ref"}:
            if template is None:
                raise ScheduleDefinitionError(f"{where}: its zones are !Ref {zones['Ref']}; read with the template")
            zones = template.parameter_default(str(zones["Ref"]))
        if isinstance(zones, str):
            zones = zones.split(",")
        if not isinstance(zones, list) or not all(isinstance(zone, str) for zone in zones):
            raise ScheduleDefinitionError(
                f"{where}: needs {OPERATING_ZONES_KEY} as a list of IANA zones, got {zones!r}"
            )
        try:
            return LocalClock.parse(str(value), zones, where=where)
        except LocalClockError as error:
            raise ScheduleDefinitionError(str(error)) from None

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
    def own_environment(self) -> dict[str, Any]:
        """The function's own variables, without Globals' (which name every job's tables)."""
        return dict((self.properties.get("Environment") or {}).get("Variables") or {})

    @property
    def declared_tables(self) -> list[str]:
        """The tables its job declares its own (`Metadata: clockless: tables`, from Mappings.Jobs)."""
        block = self.metadata.get("clockless")
        tables = block.get(TABLES_KEY) if isinstance(block, Mapping) else None
        return [str(table) for table in tables] if isinstance(tables, list) else []

    @property
    def event_invoke_config(self) -> Mapping[str, Any]:
        value = self.properties.get("EventInvokeConfig") or self.globals.get("EventInvokeConfig") or {}
        return value if isinstance(value, Mapping) else {}

    @property
    def schedules(self) -> list[Schedule]:
        events = self.properties.get("Events") or {}
        block = self.metadata.get("clockless")
        declared = block if isinstance(block, Mapping) else {}
        return [
            Schedule(
                function_id=self.logical_id,
                event_id=event_id,
                properties=event.get("Properties") or {},
                declared=declared,
            )
            for event_id, event in events.items()
            if isinstance(event, Mapping) and event.get("Type") in ("ScheduleV2", "Schedule")
        ]

    @property
    def worker_of(self) -> str | None:
        """The scheduled function whose ticks this function works on (`Metadata: clockless: worker_of`)."""
        block = self.metadata.get("clockless")
        value = block.get(WORKER_OF_KEY) if isinstance(block, Mapping) else None
        return value if isinstance(value, str) else None

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
                properties=self._with_managed_policies(resource.get("Properties") or {}),
                globals=self.function_globals,
                metadata=resource.get("Metadata") or {},
            )
            for logical_id, resource in self.resources_of_type("AWS::Serverless::Function").items()
        }

    def _with_managed_policies(self, properties: Mapping[str, Any]) -> Mapping[str, Any]:
        """`Policies` with each `!Ref` to an AWS::IAM::ManagedPolicy of this template replaced by its
        PolicyDocument: what the function's role is allowed, wherever the statements are written."""
        policies = properties.get("Policies")
        if not isinstance(policies, list):
            return properties
        managed = self.resources_of_type("AWS::IAM::ManagedPolicy")
        inlined = [
            (managed[policy["Ref"]].get("Properties") or {}).get("PolicyDocument") or {}
            if isinstance(policy, Mapping) and set(policy) == {"Ref"} and policy["Ref"] in managed
            else policy
            for policy in policies
        ]
        return {**properties, "Policies": inlined}

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
    def queues(self) -> dict[str, Queue]:
        return {
            logical_id: Queue(logical_id, resource)
            for logical_id, resource in self.resources_of_type(QUEUE_TYPE).items()
        }

    @property
    def event_source_mappings(self) -> dict[str, EventSourceMapping]:
        return {
            logical_id: EventSourceMapping(logical_id, resource.get("Properties") or {})
            for logical_id, resource in self.resources_of_type(EVENT_SOURCE_MAPPING_TYPE).items()
        }

    def mappings_of(self, function_id: str) -> list[EventSourceMapping]:
        """The event source mappings that invoke `function_id`."""
        return [esm for esm in self.event_source_mappings.values() if esm.function == function_id]

    @property
    def worker_functions(self) -> dict[str, Function]:
        """Functions that apply fanned-out work: fed by an event source mapping, or declaring `worker_of`."""
        fed = {esm.function for esm in self.event_source_mappings.values()}
        return {
            logical_id: fn for logical_id, fn in self.functions.items() if logical_id in fed or fn.worker_of is not None
        }

    def workers_of(self, function_id: str) -> dict[str, Function]:
        """The worker functions that declare `worker_of: <function_id>`."""
        return {logical_id: fn for logical_id, fn in self.functions.items() if fn.worker_of == function_id}

    def work_queue_for_job(self, job: str) -> Queue:
        """The queue the job's worker is fed from; TemplateError when the job has no one worker queue."""
        coordinator = self.function_for_job(job)
        sources = {
            esm.source
            for worker_id in self.workers_of(coordinator.logical_id)
            for esm in self.mappings_of(worker_id)
            if esm.source in self.queues
        }
        if len(sources) != 1:
            raise TemplateError(
                f"job {job!r}: expected one work queue (an event source mapping feeding a function with "
                f"worker_of: {coordinator.logical_id}), found {len(sources)}"
            )
        return self.queues[str(sources.pop())]

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
