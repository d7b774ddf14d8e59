"""The embedded AWS beyond DynamoDB: template.yaml's secrets with known local values, and moto's
Lambda accepting asynchronous invokes without Docker (it queues nothing and runs nothing)."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Mapping
from typing import Any, Final

from clockless_tools.local.dynamodb import local_client
from clockless_tools.local.queues import create_queues
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template
from clockless_tools.template.scheduler import ScheduleRef, expected_schedule, parameter_resolver

# The value every generated secret key gets locally; events/job_trigger/ samples send it. Like
# LOCAL_CREDENTIALS it only ever exists on the loopback server.
LOCAL_SECRET_VALUE: Final = "clockless-local-trigger-secret"  # noqa: S105 - local only, published


def secrets_client(endpoint: str) -> Any:
    return local_client("secretsmanager", endpoint)


def local_secret_string(logical_id: str, properties: Mapping[str, Any]) -> str:
    """The secret's local value: its literal SecretString, or its GenerateSecretString shape with
    the generated key set to LOCAL_SECRET_VALUE."""
    literal = properties.get("SecretString")
    if isinstance(literal, str):
        return literal
    generate = properties.get("GenerateSecretString")
    if not isinstance(generate, Mapping):
        raise TemplateError(f"{logical_id}: a secret needs SecretString or GenerateSecretString")
    key = generate.get("GenerateStringKey")
    if key is None:
        return LOCAL_SECRET_VALUE
    try:
        shape = json.loads(str(generate.get("SecretStringTemplate", "{}")))
    except json.JSONDecodeError as error:
        raise TemplateError(f"{logical_id}: SecretStringTemplate is not JSON: {error.msg}") from None
    if not isinstance(shape, dict):
        raise TemplateError(f"{logical_id}: SecretStringTemplate must be a JSON object")
    return json.dumps({**shape, str(key): LOCAL_SECRET_VALUE})


def create_secrets(template: Template, endpoint: str, names: LocalNames = LocalNames()) -> list[str]:
    """Every secret template.yaml declares, under the name its !Ref resolves to locally, at its
    local value (an existing one is reset to it). Returns the names."""
    client = secrets_client(endpoint)
    created = []
    for logical_id, resource in template.resources_of_type("AWS::SecretsManager::Secret").items():
        name = str(resolve({"Ref": logical_id}, template, names))
        value = local_secret_string(logical_id, resource.get("Properties") or {})
        try:
            client.create_secret(Name=name, SecretString=value)
        except client.exceptions.ResourceExistsException:
            client.put_secret_value(SecretId=name, SecretString=value)
        created.append(name)
    return created


def accept_lambda_invokes(endpoint: str) -> None:
    """Switch moto's Lambda to its Docker-free backend: an invoke is accepted (202 for an
    asynchronous one) and nothing runs. Run the tick with `clockless invoke <Function>`."""
    request = urllib.request.Request(  # noqa: S310 - the loopback endpoint this process started
        f"{endpoint}/moto-api/config",
        data=json.dumps({"lambda": {"use_docker": False}}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - see above
        response.read()


def local_schedule(template: Template, job: str, client: Any, names: LocalNames = LocalNames()) -> ScheduleRef:
    """A job's schedule as `local up` creates it in the embedded scheduler: named <Function><Event>."""
    schedule = template.jobs[job]
    parameters = {name: str(template.parameter_default(name)) for name in template.document.get("Parameters") or {}}
    resolve_schedule = parameter_resolver(
        parameters, lambda logical_id: str(resolve({"Fn::GetAtt": [logical_id, "Arn"]}, template, names)), str
    )
    function_arn = str(resolve({"Fn::GetAtt": [schedule.function_id, "Arn"]}, template, names))
    return ScheduleRef(
        job=job,
        client=client,
        name=f"{schedule.function_id}{schedule.event_id}",
        group="default",
        expected=expected_schedule(schedule, function_arn=function_arn, resolve=resolve_schedule),
    )


def create_schedules(template: Template, endpoint: str, names: LocalNames = LocalNames()) -> list[str]:
    """Each job's schedule in the embedded EventBridge Scheduler, as SAM's ScheduleV2 deploys it,
    so `pause`, `resume` and `drift` act locally as on a stack. An existing one is kept as it is
    (a paused job stays paused across `local up`). Returns the names."""
    client = local_client("scheduler", endpoint)
    created = []
    for job in sorted(template.jobs):
        ref = local_schedule(template, job, client, names)
        role = f"arn:aws:iam::{names.account_id}:role/{names.stack_name}-{ref.name}Role"
        request = {**ref.expected, "Target": {**ref.expected["Target"], "RoleArn": role}}
        with contextlib.suppress(client.exceptions.ConflictException):
            client.create_schedule(Name=ref.name, GroupName=ref.group, **request)
        created.append(ref.name)
    return created


def provision_services(template: Template, endpoint: str, names: LocalNames = LocalNames()) -> list[str]:
    """What the functions need besides their tables: the queues (work queues and their dead-letter
    queues, the schedules' failure queues), the schedules, the secrets. Returns the secrets' names."""
    accept_lambda_invokes(endpoint)
    create_queues(template, endpoint, names)
    create_schedules(template, endpoint, names)
    return create_secrets(template, endpoint, names)
