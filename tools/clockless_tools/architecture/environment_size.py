"""Rule `environment-size`: every function's environment fits Lambda's 4 KB, at its longest.

Lambda refuses a function whose environment variables exceed 4 KB in aggregate (a quota that cannot
be raised). It counts keys and values together, as one compact JSON object: the refusal
(`InvalidParameterValueException: ... exceeded the 4KB limit. String measured: {"KEY":"value",...}`)
prints the string it measured, and LocalStack, which copies it, compares that string's UTF-8 length
with 4,096 bytes. A quote inside a value is measured escaped (`\\"`: two bytes). Nothing before the
deploy says so: cfn-lint, `sam validate` and the rules see a template of intrinsics, and CloudFormation
fails the stack's update when the names are known. The environment grows with the jobs: each adds its
tables' names to Globals (every function carries them) and a line each to the HTTP trigger's
`JOB_FUNCTIONS` and `JOB_SCHEDULES`.

Each function's environment is sized as deployed: Globals' variables overlaid with its own (SAM's
merge), loops written out, with every intrinsic at its longest:
- a parameter: a String's `MaxLength` or longest `AllowedValues`, a Number's longer of `MinValue` and
  `MaxValue` in digits, else its `Default` (a deploy that passes a longer unbounded value is outside
  the check: bound the parameter to bring it in);
- the stack's name (`AWS::StackName`, and the first part of every name CloudFormation generates): the
  longest `stack_name` in samconfig.toml, the stacks `make deploy` makes (CloudFormation's maximum, 128
  characters, when it names none; a stack deployed under a longer name is outside the check: name it
  there to bring it in);
- the other pseudo parameters: `AWS::Region` 20 characters (the longest region name today has 14),
  `AWS::AccountId` 12, `AWS::Partition` 10 (`aws-us-gov`), `AWS::URLSuffix` 16 (`amazonaws.com.cn`);
- a resource the template does not name: the name CloudFormation generates, `<stack>-<logical
  id>-<13 characters>`, cut to the service's maximum (a DynamoDB table 255, a queue 80, a function 64,
  a secret 512, a topic 256, a log group 512, a bucket 63); one the template names: that name at its
  longest. `Ref` and `Fn::GetAtt` are that name, or the URL or ARN built around it;
- `Fn::Sub` and `Fn::Join` their parts, `Fn::If` and `Fn::Select` their longest choice.
A value the rule cannot bound (an import, a resource type it does not know) is reported, not guessed.
No margin is kept below the limit (the rules pass or fail; none warns): the bound is already the
longest deploy, and the violation names the biggest variables.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.model import Function, Template

ENVIRONMENT_SIZE: Final = "environment-size"
# Lambda's quota on a function's environment variables, in aggregate.
LIMIT_BYTES: Final = 4096

STACK_NAME_MAX: Final = 128
# Where the stacks this project deploys are named.
SAMCONFIG: Final = "samconfig.toml"
# The random part CloudFormation appends to a name it generates (12 or 13 characters).
GENERATED_SUFFIX: Final = 13
_PSEUDO: Final = {
    "AWS::StackName": STACK_NAME_MAX,
    "AWS::Region": 20,
    "AWS::AccountId": 12,
    "AWS::Partition": 10,
    "AWS::URLSuffix": 16,
    "AWS::NoValue": 0,
}
# What the rule counts for a character it knows only the length of: needs no JSON escaping.
_FILL: Final = "x"
_SUB_TOKEN: Final = re.compile(r"\$\{([^}!]+)\}")
# The HTTP trigger's variables that carry a line per job (docs/http-trigger.md).
_JOB_LIST: Final = "JOB_FUNCTIONS"
_JOB_SCHEDULES: Final = "JOB_SCHEDULES"


@dataclass(frozen=True, slots=True)
class _Kind:
    """A resource type: its name's maximum, the property that names it, and what Ref and GetAtt give."""

    name_max: int
    name_property: str
    ref: str  # a format over {name}, {partition}, {region}, {account}, {url_suffix}
    attributes: Mapping[str, str]


_KINDS: Final[Mapping[str, _Kind]] = {
    "AWS::DynamoDB::Table": _Kind(
        255,
        "TableName",
        "{name}",
        {
            "Arn": "arn:{partition}:dynamodb:{region}:{account}:table/{name}",
            # A stream's label is an ISO timestamp with milliseconds (23 characters).
            "StreamArn": "arn:{partition}:dynamodb:{region}:{account}:table/{name}/stream/" + _FILL * 23,
        },
    ),
    "AWS::SQS::Queue": _Kind(
        80,
        "QueueName",
        "https://sqs.{region}.{url_suffix}/{account}/{name}",
        {
            "Arn": "arn:{partition}:sqs:{region}:{account}:{name}",
            "QueueName": "{name}",
            "QueueUrl": "https://sqs.{region}.{url_suffix}/{account}/{name}",
        },
    ),
    **{
        kind: _Kind(64, "FunctionName", "{name}", {"Arn": "arn:{partition}:lambda:{region}:{account}:function:{name}"})
        for kind in ("AWS::Serverless::Function", "AWS::Lambda::Function")
    },
    # A secret's ARN ends in a hyphen and six random characters.
    "AWS::SecretsManager::Secret": _Kind(
        512, "Name", "arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-" + _FILL * 6, {}
    ),
    "AWS::SNS::Topic": _Kind(
        256,
        "TopicName",
        "arn:{partition}:sns:{region}:{account}:{name}",
        {"TopicArn": "arn:{partition}:sns:{region}:{account}:{name}", "TopicName": "{name}"},
    ),
    "AWS::Logs::LogGroup": _Kind(
        512, "LogGroupName", "{name}", {"Arn": "arn:{partition}:logs:{region}:{account}:log-group:{name}:*"}
    ),
    "AWS::S3::Bucket": _Kind(63, "BucketName", "{name}", {"Arn": "arn:{partition}:s3:::{name}"}),
}


class _Unsized(ValueError):
    """A value whose longest length the rule cannot bound; the message says which and why."""


@dataclass(frozen=True, slots=True)
class EnvironmentSize:
    """One function's environment at its longest: the bytes Lambda measures, and each variable's share."""

    function_id: str
    total: int
    variables: Mapping[str, int]

    def biggest(self, count: int = 3) -> str:
        ranked = sorted(self.variables.items(), key=lambda item: (-item[1], item[0]))[:count]
        return ", ".join(f"{name} {size:,}" for name, size in ranked)


def environment_size(template: Template, fn: Function, *, stack_name_max: int = STACK_NAME_MAX) -> EnvironmentSize:
    """The function's environment as Lambda measures it, each intrinsic at its longest (a stack name of
    `stack_name_max` characters); raises ValueError naming the variable when one cannot be bounded."""
    sizer = _Sizer(template, stack_name_max)
    resolved: dict[str, str] = {}
    for name, value in fn.environment.items():
        try:
            resolved[str(name)] = _text(sizer.longest(value))
        except _Unsized as error:
            raise ValueError(f"{name}: {error}") from None
    # Each variable's share: its key, its value and the punctuation around them ("KEY":"value",).
    shares = {name: _measured({name: value}) - 1 for name, value in resolved.items()}
    return EnvironmentSize(fn.logical_id, _measured(resolved), shares)


def deployed_stack_name_max(project: Project) -> int:
    """The longest stack name the project deploys under: samconfig.toml's `stack_name`s (what `sam
    deploy` and `make deploy` use), or CloudFormation's maximum when it names none."""
    try:
        config = tomllib.loads((project.root / SAMCONFIG).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return STACK_NAME_MAX
    names = [
        str(parameters["stack_name"])
        for environment in config.values()
        if isinstance(environment, Mapping)
        for command in environment.values()
        if isinstance(command, Mapping)
        for parameters in [command.get("parameters")]
        if isinstance(parameters, Mapping) and "stack_name" in parameters
    ]
    return min(STACK_NAME_MAX, max(map(len, names))) if names else STACK_NAME_MAX


def _measured(variables: Mapping[str, str]) -> int:
    """The bytes of the compact JSON Lambda measures, the longer of its escaped and UTF-8 spellings."""
    return max(
        len(json.dumps(variables, separators=(",", ":"), ensure_ascii=ascii_only).encode("utf-8"))
        for ascii_only in (True, False)
    )


def check_environment_size(project: Project) -> Iterator[Violation]:
    template = project.template
    stack_name_max = deployed_stack_name_max(project)
    for logical_id, fn in template.functions.items():
        try:
            size = environment_size(template, fn, stack_name_max=stack_name_max)
        except ValueError as error:
            yield Violation(
                ENVIRONMENT_SIZE,
                project.template_file,
                logical_id,
                f"its environment cannot be sized: {error}",
                "write the value as a literal or an intrinsic the rule bounds (architecture/environment_size.py "
                "lists them), or give the parameter a MaxLength or MaxValue",
            )
            continue
        if size.total > LIMIT_BYTES:
            yield Violation(
                ENVIRONMENT_SIZE,
                project.template_file,
                logical_id,
                f"its environment is {size.total:,} bytes at its longest (a {stack_name_max}-character stack name), "
                f"over Lambda's {LIMIT_BYTES:,} for keys and values as compact JSON: a deploy with names that long "
                f"fails; the biggest: {size.biggest()}",
                f"shrink it by {size.total - LIMIT_BYTES:,} bytes or more: move the biggest variable out of the "
                "environment (a file the function ships, or a parameter it reads once at cold start), or take off "
                "Globals what only some functions read",
            )


def _text(value: str | list[str]) -> str:
    return ",".join(value) if isinstance(value, list) else value


@dataclass(frozen=True, slots=True)
class _Sizer:
    """Intrinsics replaced by strings as long as they can be deployed."""

    template: Template
    stack_name_max: int

    def longest(self, value: Any) -> str | list[str]:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (str, int, float)):
            return str(value)
        if isinstance(value, list):
            return [_text(self.longest(item)) for item in value]
        if not (isinstance(value, Mapping) and len(value) == 1):
            raise _Unsized(f"{value!r} is not a string or an intrinsic")
        ((name, argument),) = value.items()
        intrinsic: Callable[[], str | list[str]] | None = {
            "Ref": lambda: self.ref(str(argument)),
            "Fn::GetAtt": lambda: self.get_att(argument),
            "Fn::Join": lambda: self.join(argument),
            "Fn::Sub": lambda: self.sub(argument),
            "Fn::If": lambda: max((_text(self.longest(choice)) for choice in argument[1:]), key=len),
            "Fn::Select": lambda: self.select(argument),
        }.get(name)
        if intrinsic is None:
            raise _Unsized(f"{name} is not an intrinsic the rule can bound")
        return intrinsic()

    def get_att(self, argument: Any) -> str:
        logical_id, attribute = argument if isinstance(argument, list) else str(argument).split(".", 1)
        return self.resource(str(logical_id), str(attribute))

    def join(self, argument: Any) -> str:
        delimiter, items = argument
        parts = self.longest(items)
        return str(delimiter).join(parts if isinstance(parts, list) else [parts])

    def select(self, argument: Any) -> str:
        choices = self.longest(argument[1])
        return max(choices, key=len) if isinstance(choices, list) and choices else _text(choices)

    def pseudo(self, name: str) -> str:
        return _FILL * (self.stack_name_max if name == "AWS::StackName" else _PSEUDO[name])

    def ref(self, name: str) -> str | list[str]:
        if name in _PSEUDO:
            return self.pseudo(name)
        parameters = self.template.document.get("Parameters") or {}
        if name in parameters:
            return _parameter(name, parameters[name])
        return self.resource(name, None)

    def resource(self, logical_id: str, attribute: str | None) -> str:
        resource = self.template.resources.get(logical_id)
        if resource is None:
            raise _Unsized(f"{logical_id} is no parameter or resource of the template")
        resource_type = str(resource.get("Type"))
        kind = _KINDS.get(resource_type)
        if kind is None:
            raise _Unsized(f"{logical_id} is a {resource_type}, whose names the rule does not know")
        pattern = kind.ref if attribute is None else kind.attributes.get(attribute)
        if pattern is None:
            raise _Unsized(f"{logical_id}.{attribute} is an attribute of a {resource_type} the rule does not know")
        given = (resource.get("Properties") or {}).get(kind.name_property)
        generated = self.stack_name_max + 1 + len(logical_id) + 1 + GENERATED_SUFFIX
        name = _FILL * min(kind.name_max, generated) if given is None else _text(self.longest(given))
        return pattern.format(
            name=name[: kind.name_max],
            partition=self.pseudo("AWS::Partition"),
            region=self.pseudo("AWS::Region"),
            account=self.pseudo("AWS::AccountId"),
            url_suffix=self.pseudo("AWS::URLSuffix"),
        )

    def sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else (argument[0], argument[1] or {})

        def substitute(match: re.Match[str]) -> str:
            token = match.group(1).strip()
            if token in variables:
                return _text(self.longest(variables[token]))
            if "." in token and not token.startswith("AWS::"):
                logical_id, attribute = token.split(".", 1)
                return self.resource(logical_id, attribute)
            return _text(self.ref(token))

        return _SUB_TOKEN.sub(substitute, str(text))


def _parameter(name: str, parameter: Mapping[str, Any]) -> str | list[str]:
    kind = str(parameter.get("Type", "String"))
    allowed = parameter.get("AllowedValues")
    if isinstance(allowed, list) and allowed:
        return max((str(choice) for choice in allowed), key=len)
    if kind == "String" and "MaxLength" in parameter:
        return _FILL * int(parameter["MaxLength"])
    if kind == "Number" and "MaxValue" in parameter:
        bounds = [str(parameter[key]) for key in ("MinValue", "MaxValue") if key in parameter]
        return max(bounds, key=len)
    if "Default" not in parameter:
        raise _Unsized(f"parameter {name} has no Default, MaxLength, MaxValue or AllowedValues to bound it")
    default = str(parameter["Default"])
    return [item.strip() for item in default.split(",")] if kind == "CommaDelimitedList" else default


ENVIRONMENT_SIZE_RULE = Rule(
    ENVIRONMENT_SIZE,
    "every function's environment (Globals' variables and its own, as compact JSON, each name and ARN at its "
    "longest) fits Lambda's 4 KB",
    check_environment_size,
)


def environment_table(project: Project) -> str:
    """Each function's environment at its longest as a Markdown table, and what a job adds to the
    trigger's (docs/http-trigger.md): the numbers the rule checks."""
    template = project.template
    stack_name_max = deployed_stack_name_max(project)
    sizes = [environment_size(template, fn, stack_name_max=stack_name_max) for fn in template.functions.values()]
    lines = [
        f"| function | bytes at its longest (a {stack_name_max}-character stack name) | left of {LIMIT_BYTES:,} | "
        "the biggest |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{size.function_id}` | {size.total:,} | {LIMIT_BYTES - size.total:,} | {size.biggest()} |"
        for size in sorted(sizes, key=lambda size: -size.total)
    ]
    trigger = next((size for size in sizes if _JOB_LIST in size.variables), None)
    jobs = len(template.jobs)
    if trigger is not None and jobs:
        per_job = _per_job(template, trigger, jobs)
        lines += [
            "",
            f"A job adds about {per_job:,} bytes to `{trigger.function_id}` (its line in `{_JOB_LIST}` and "
            f"`{_JOB_SCHEDULES}`, and its table's name in `Globals`): room for about "
            f"{(LIMIT_BYTES - trigger.total) // per_job} more.",
        ]
    return "\n".join(lines)


def _per_job(template: Template, trigger: EnvironmentSize, jobs: int) -> int:
    """The trigger's bytes per job: its jobs' lines, and the Globals variables naming their tables."""
    lines = sum(trigger.variables.get(name, 0) for name in (_JOB_LIST, _JOB_SCHEDULES))
    tables = {table for fn in template.scheduled_functions.values() for table in fn.declared_tables}
    globals_variables = (template.function_globals.get("Environment") or {}).get("Variables") or {}
    naming = [name for name, value in globals_variables.items() if value in ({"Ref": table} for table in tables)]
    return -(-(lines + sum(trigger.variables.get(name, 0) for name in naming)) // jobs)
