"""How an operating command reaches its target, and what it says when it cannot.

A deployed stack is reached with the region and profile `sam deploy` used: samconfig.toml's
chosen environment (`--config-env`, default `default`), its `global` parameters then its `deploy`
section, overridden by the AWS variables, overridden by `--region`/`--profile`. The local runtime
is reached at a URL that must answer. Every failure on the way becomes an `OperationError` whose
message is one line: what was wrong, and what to do.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)

from clockless_tools.operations.targets import OperationError, StackTarget
from clockless_tools.template.model import Template

DEFAULT_CONFIG_ENV = "default"
# The samconfig.toml sections an operating command reads, later ones winning, as `sam deploy`
# reads them: the environment's global parameters, then the command that deployed the stack.
_SAMCONFIG_SECTIONS = ("global", "deploy")
CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, run `aws configure`, or `aws sso login --profile <name>` "
    "and pass --profile <name>"
)


class StackNotDeployed(OperationError):
    """The stack named is not deployed where it was looked for (a first `sam deploy` creates it)."""


@dataclass(frozen=True)
class Setting:
    """A resolved value and where it came from, for the error that names it."""

    value: str | None
    source: str


@dataclass(frozen=True)
class StackConnection:
    stack: str
    region: Setting
    profile: Setting
    samconfig: Path
    config_env: str

    @property
    def looked_in(self) -> str:
        sections = " and ".join(f"[{self.config_env}.{s}.parameters]" for s in _SAMCONFIG_SECTIONS)
        return f"--region, AWS_REGION, AWS_DEFAULT_REGION, {self.samconfig.name} {sections}, the profile's config"


def samconfig_parameters(path: Path, config_env: str) -> dict[str, Any]:
    """The chosen environment's parameters an operating command uses (empty when there is no file)."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise OperationError(f"cannot read {path}: {error}") from None
    environment = document.get(config_env)
    if config_env != DEFAULT_CONFIG_ENV and not isinstance(environment, dict):
        known = ", ".join(sorted(k for k, v in document.items() if isinstance(v, dict))) or "none"
        raise OperationError(f"{path.name} has no environment {config_env!r} (--config-env); it has: {known}")
    merged: dict[str, Any] = {}
    for section in _SAMCONFIG_SECTIONS:
        merged.update(((environment or {}).get(section) or {}).get("parameters") or {})
    return merged


def resolve_connection(
    stack: str, *, region: str | None, profile: str | None, samconfig: Path, config_env: str
) -> StackConnection:
    parameters = samconfig_parameters(samconfig, config_env)
    where = f"{samconfig.name} [{config_env}]"

    def pick(flag: str | None, flag_name: str, variables: tuple[str, ...], key: str) -> Setting:
        if flag:
            return Setting(flag, flag_name)
        for variable in variables:
            if os.environ.get(variable):
                return Setting(os.environ[variable], variable)
        if parameters.get(key):
            return Setting(str(parameters[key]), where)
        return Setting(None, "")

    return StackConnection(
        stack=stack,
        region=pick(region, "--region", ("AWS_REGION", "AWS_DEFAULT_REGION"), "region"),
        profile=pick(profile, "--profile", ("AWS_PROFILE",), "profile"),
        samconfig=samconfig,
        config_env=config_env,
    )


def stack_session(connection: StackConnection) -> Any:
    """A boto3 session for the stack, refused in one line when it could not sign a request."""
    profile = connection.profile
    try:
        session = boto3.Session(region_name=connection.region.value, profile_name=profile.value)
    except ProfileNotFound:
        raise OperationError(
            f"AWS profile {profile.value!r} (from {profile.source}) is not in ~/.aws/config or ~/.aws/credentials: "
            "list them with `aws configure list-profiles`, or create it with `aws configure --profile "
            f"{profile.value}`"
        ) from None
    if session.region_name is None:
        raise OperationError(
            f"no AWS region for stack {connection.stack!r}: looked in {connection.looked_in}; "
            "pass --region (e.g. --region eu-west-1) or set region in samconfig.toml"
        )
    if session.get_credentials() is None:
        whose = f" for profile {profile.value!r}" if profile.value else ""
        raise OperationError(f"no AWS credentials{whose}: {CREDENTIALS_HINT}")
    return session


def require_endpoint(endpoint: str, *, option: str = "--endpoint", timeout: float = 2.0) -> str:
    """A local endpoint that is a URL and answers; anything else refused in one line."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OperationError(
            f"{option} {endpoint!r} is not a URL: write it with its scheme (e.g. http://127.0.0.1:8765)"
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise OperationError(f"{option} {endpoint!r} has no valid port (e.g. http://127.0.0.1:8765)") from None
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError:
        raise OperationError(
            f"nothing answers at {endpoint}: start the embedded DynamoDB with `make local-up` "
            "(`clockless local status` shows where it listens)"
        ) from None
    return endpoint


@contextlib.contextmanager
def reported(where: str) -> Iterator[None]:
    """AWS failures while talking to `where`, as one-line `OperationError`s."""
    try:
        yield
    except NoCredentialsError:
        raise OperationError(f"no AWS credentials to reach {where}: {CREDENTIALS_HINT}") from None
    except NoRegionError:
        raise OperationError(f"no AWS region to reach {where}: pass --region (e.g. --region eu-west-1)") from None
    except EndpointConnectionError as error:
        raise OperationError(
            f"{where} does not answer at {error.kwargs.get('endpoint_url')}: check the network, the region, "
            "and for the local runtime that `clockless local status` says it runs"
        ) from None
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "Error")
        message = " ".join(str(error.response.get("Error", {}).get("Message", "")).split())
        if code in ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException"):
            raise OperationError(f"AWS refused the credentials for {where} ({code}): {CREDENTIALS_HINT}") from None
        if code in ("AccessDenied", "AccessDeniedException"):
            raise OperationError(f"access denied on {where}: {message}; use a profile allowed to operate it") from None
        raise OperationError(f"{where}: {code}: {message}") from None
    except BotoCoreError as error:
        raise OperationError(f"{where}: {' '.join(str(error).split())}") from None


def open_stack(template: Template, connection: StackConnection) -> StackTarget:
    """The deployed stack as a `JobTarget`, after proving it exists where we looked."""
    session = stack_session(connection)
    where = f"stack {connection.stack!r} in {session.region_name}"
    with reported(where):
        try:
            session.client("cloudformation").describe_stacks(StackName=connection.stack)
        except ClientError as error:
            if "does not exist" not in str(error):
                raise
            deployed = samconfig_parameters(connection.samconfig, connection.config_env).get("stack_name")
            hint = f" ({connection.samconfig.name} [{connection.config_env}] deploys {deployed!r})" if deployed else ""
            raise StackNotDeployed(
                f"stack {connection.stack!r} not found in {session.region_name} (region from "
                f"{connection.region.source or 'the profile'}): check --stack{hint} and --region"
            ) from None
        return StackTarget(template, connection.stack, session=session)
