"""The schedule EventBridge Scheduler holds for a job: where it is (name, group, client), what
template.yaml says it should be, and the UpdateSchedule request that changes only its State.

UpdateSchedule replaces the whole schedule: a field left out is reset, not kept. So a State change
is the schedule GetSchedule returned, every updatable field carried over, with only State set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clockless_tools.template.model import Schedule

ENABLED, DISABLED = "ENABLED", "DISABLED"
# Every field UpdateSchedule takes besides ClientToken; GetSchedule returns each of them.
UPDATABLE_FIELDS = (
    "Name",
    "GroupName",
    "ScheduleExpression",
    "ScheduleExpressionTimezone",
    "StartDate",
    "EndDate",
    "Description",
    "State",
    "KmsKeyArn",
    "Target",
    "FlexibleTimeWindow",
    "ActionAfterCompletion",
)


@dataclass(frozen=True)
class ScheduleRef:
    """One job's deployed schedule: the Scheduler client that reaches it, its name and group, and
    the schedule template.yaml declares, resolved to the ARNs of where it is deployed."""

    job: str
    client: Any
    name: str
    group: str
    expected: Mapping[str, Any]

    def get(self) -> dict[str, Any]:
        response = dict(self.client.get_schedule(Name=self.name, GroupName=self.group))
        response.pop("ResponseMetadata", None)
        return response

    def set_state(self, state: str) -> dict[str, Any]:
        """Set State, every other field carried over; returns the schedule as it was before."""
        current = self.get()
        if current.get("State") != state:
            self.client.update_schedule(**state_update(current, state))
        return current


def state_update(current: Mapping[str, Any], state: str) -> dict[str, Any]:
    """The UpdateSchedule request that changes only State."""
    request = {name: current[name] for name in UPDATABLE_FIELDS if current.get(name) not in (None, "")}
    request["State"] = state
    return request


Resolver = Callable[[Any], Any]


def expected_schedule(schedule: Schedule, *, function_arn: str, resolve: Resolver) -> dict[str, Any]:
    """The fields of GetSchedule template.yaml determines, as SAM's ScheduleV2 deploys them."""
    properties = schedule.properties
    target: dict[str, Any] = {"Arn": function_arn, "Input": schedule.input_text}
    if "RetryPolicy" in properties:
        target["RetryPolicy"] = {key: int(value) for key, value in dict(properties["RetryPolicy"]).items()}
    if "DeadLetterConfig" in properties:
        target["DeadLetterConfig"] = {"Arn": resolve(dict(properties["DeadLetterConfig"])["Arn"])}
    window = dict(properties.get("FlexibleTimeWindow") or {"Mode": "OFF"})
    if "MaximumWindowInMinutes" in window:
        window["MaximumWindowInMinutes"] = int(window["MaximumWindowInMinutes"])
    return {
        "ScheduleExpression": schedule.expression,
        "ScheduleExpressionTimezone": schedule.timezone or "UTC",
        "State": str(resolve(properties.get("State", ENABLED))),
        "FlexibleTimeWindow": window,
        "Target": target,
    }


def parameter_resolver(
    parameters: Mapping[str, str], arn_of: Callable[[str], str], physical: Callable[[str], str]
) -> Resolver:
    """Resolve what a schedule's properties use: literals, `!Ref` to a parameter or a resource,
    and `!GetAtt <resource>.Arn`."""

    def resolve(value: Any) -> Any:
        if isinstance(value, Mapping) and len(value) == 1:
            ((name, argument),) = value.items()
            if name == "Ref":
                return parameters[argument] if argument in parameters else physical(str(argument))
            if name == "Fn::GetAtt":
                logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
                if attribute == "Arn":
                    return arn_of(str(logical_id))
        return value

    return resolve
