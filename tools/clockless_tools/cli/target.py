"""Where an operating command acts, declared once: `TargetOptions` (the template, and a deployed stack
with how to reach it, or the local runtime) and `@target_options`, which puts its seven options on
a command's command line and hands the command one `TargetOptions`.

Every command that reads or changes a deployment (status, backfill, run-now, pause, resume, drift, shards check,
work show, work redrive) takes the same options with the same help, so they are written here once,
as click's shared-option decorators and pipx's shared arguments are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from clockless_tools.cli.common import EXIT_PAUSED, TemplateOption, fail, flag
from clockless_tools.local.server import running_endpoint
from clockless_tools.operations.connection import (
    DEFAULT_CONFIG_ENV,
    open_stack,
    reported,
    require_endpoint,
    resolve_connection,
)
from clockless_tools.operations.pause import JobPaused
from clockless_tools.operations.targets import JobTarget, LocalTarget, OperationError, PartitionsFailing
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError
from clockless_tools.template.model import Template

StackOption = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="A deployed stack, reached with samconfig.toml's region and profile (default: the local runtime). "
        "E.g. --stack clockless-dev",
    ),
]
RegionOption = Annotated[
    str | None,
    typer.Option(
        "--region", help="AWS region of --stack; overrides AWS_REGION and samconfig.toml. E.g. --region eu-west-1"
    ),
]
ProfileOption = Annotated[
    str | None,
    typer.Option(
        "--profile", help="AWS profile for --stack; overrides AWS_PROFILE and samconfig.toml. E.g. --profile ops"
    ),
]
ConfigEnvOption = Annotated[
    str,
    typer.Option(
        "--config-env",
        help="samconfig.toml environment to read region and profile from, as sam does. E.g. --config-env prod",
    ),
]
ConfigFileOption = Annotated[
    Path | None,
    typer.Option(
        "--config-file",
        help="The samconfig.toml to read (default: the one beside --template), as sam. E.g. --config-file ops.toml",
    ),
]
EndpointOption = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="Local DynamoDB endpoint (default: the running `local up`). E.g. --endpoint http://127.0.0.1:8765",
    ),
]


@dataclass(frozen=True, slots=True)
class TargetOptions:
    """The template, and where to act: a deployed stack (`stack`, reached with region, profile and
    samconfig.toml's environment) or the local runtime (`endpoint`, default the running `local up`)."""

    template: Path = DEFAULT_TEMPLATE
    stack: str | None = None
    region: str | None = None
    profile: str | None = None
    config_env: str = DEFAULT_CONFIG_ENV
    config_file: Path | None = None
    endpoint: str | None = None

    def open(self) -> tuple[Template, JobTarget]:
        """The template and where to act, or one line saying why not (exit 2)."""
        try:
            return self.open_target()
        except (TemplateError, OperationError) as error:
            raise fail(str(error)) from None

    def open_target(self) -> tuple[Template, JobTarget]:
        """The template and where to act; TemplateError or OperationError (StackNotDeployed for a
        stack not found) saying why not."""
        template = Template.load(self.template)
        if self.stack is not None:
            connection = resolve_connection(
                self.stack,
                region=self.region,
                profile=self.profile,
                samconfig=self.config_file or self.template.resolve().parent / "samconfig.toml",
                config_env=self.config_env,
            )
            return template, open_stack(template, connection)
        endpoint = self.endpoint if self.endpoint is not None else running_endpoint()
        if endpoint is None:
            raise OperationError(
                f"no embedded DynamoDB is running: start it with `make local-up`, or pass {flag('--stack')}"
            )
        return template, LocalTarget(template, require_endpoint(endpoint))


# Each field's option on the command line, in the order --help lists them.
_OPTIONS: Final[dict[str, Any]] = {
    "template": TemplateOption,
    "stack": StackOption,
    "region": RegionOption,
    "profile": ProfileOption,
    "config_env": ConfigEnvOption,
    "config_file": ConfigFileOption,
    "endpoint": EndpointOption,
}
_DEFAULTS: Final = {field.name: field.default for field in dataclasses.fields(TargetOptions)}


def target_options[R](command: Callable[..., R]) -> Callable[..., R]:
    """Put the seven target options on `command`'s command line in place of its one keyword-only
    parameter annotated `TargetOptions`, which receives them (put this under `@app.command`)."""
    signature = inspect.signature(command, eval_str=True)
    names = [p.name for p in signature.parameters.values() if p.annotation is TargetOptions]
    if len(names) != 1:
        raise TypeError(f"{command.__name__} needs one keyword-only parameter annotated TargetOptions")
    (name,) = names
    kept = [p for p in signature.parameters.values() if p.name != name]
    clashing = sorted(set(_OPTIONS) & {p.name for p in kept})
    if clashing:
        raise TypeError(f"{command.__name__} declares target options itself: {', '.join(clashing)}")
    added = [
        inspect.Parameter(option, inspect.Parameter.KEYWORD_ONLY, default=_DEFAULTS[option], annotation=annotation)
        for option, annotation in _OPTIONS.items()
    ]

    @functools.wraps(command)
    def with_target(*args: Any, **kwargs: Any) -> R:
        chosen = TargetOptions(**{option: kwargs.pop(option) for option in _OPTIONS})
        return command(*args, **kwargs, **{name: chosen})

    parameters = [*kept, *added]
    with_target.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_target.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": signature.return_annotation}
    return with_target


@contextlib.contextmanager
def acting_on(target: JobTarget) -> Iterator[None]:
    """A refusal or an AWS failure while acting on `target`: one line on stderr, exit 2 (a paused job:
    exit 5). A tick whose partitions fail is the command's to report (exit 3)."""
    try:
        with reported(target.description):
            yield
    except PartitionsFailing:
        raise
    except JobPaused as paused:
        raise fail(str(paused), code=EXIT_PAUSED) from None
    except (OperationError, TemplateError) as error:
        raise fail(str(error)) from None
