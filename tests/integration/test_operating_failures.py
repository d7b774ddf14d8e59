"""Every operating command, on every failure of its target, prints one line saying what was wrong
and what to do, exits 2, changes nothing, and prints no traceback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.cli.common import UNDER_MAKE
from clockless_tools.local import server
from clockless_tools.operations.connection import reported, resolve_connection
from clockless_tools.operations.targets import OperationError
from clockless_tools.template.loader import DEFAULT_TEMPLATE
from tests.jobs import HOUR, job_where

CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, run `aws configure`, or `aws sso login --profile <name>` "
    "and pass --profile <name>"
)
# An hourly job (the --at and --from/--to below are on its ticks).
JOB = job_where(period=HOUR).name
# The commands that act on a target, with the arguments each needs besides the target.
COMMANDS = {
    "status": ["status"],
    "backfill": ["backfill", JOB, "--from", "2026-11-29T00:00:00Z", "--to", "2026-11-29T06:00:00Z"],
    "run-now": ["run-now", JOB, "--at", "2026-11-29T05:00:00Z"],
    "pause": ["pause", JOB, "--reason", "INC-1234"],
    "resume": ["resume", JOB],
    "drift": ["drift"],
}
AWS_VARIABLES = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_SECRETS_MANAGER",
    "AWS_ENDPOINT_URL_LAMBDA",
)


@pytest.fixture
def bare_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with no AWS configuration at all: no variables, empty config files, no IMDS."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config").write_text("", encoding="utf-8")
    (tmp_path / "credentials").write_text("", encoding="utf-8")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


def _samconfig(directory: Path, text: str) -> Path:
    path = directory / "samconfig.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(command: str, *arguments: str) -> Any:
    return CliRunner().invoke(app, [*COMMANDS[command], *arguments])


def _assert_one_line(result: Any, line: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {line}\n"
    assert "Traceback" not in result.output
    assert result.stdout == ""


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("command", COMMANDS)
def test_no_region_says_where_it_was_looked_for(command: str, bare_aws: Path) -> None:
    config = _samconfig(bare_aws, 'version = 0.1\n[default.deploy.parameters]\nstack_name = "clockless-dev"\n')

    result = _run(command, "--stack", "clockless-dev", "--config-file", str(config))

    _assert_one_line(
        result,
        "no AWS region for stack 'clockless-dev': looked in --region, AWS_REGION, AWS_DEFAULT_REGION, samconfig.toml "
        "[default.global.parameters] and [default.deploy.parameters], the profile's config; pass --region "
        "(e.g. --region eu-west-1) or set region in samconfig.toml",
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_no_credentials_says_how_to_provide_them(command: str, bare_aws: Path) -> None:
    result = _run(command, "--stack", "clockless-dev", "--region", "eu-west-1")

    _assert_one_line(result, f"no AWS credentials: {CREDENTIALS_HINT}")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_profile_is_named_with_where_it_came_from(command: str, bare_aws: Path) -> None:
    result = _run(command, "--stack", "clockless-dev", "--profile", "nope")

    _assert_one_line(
        result,
        "AWS profile 'nope' (from --profile) is not in ~/.aws/config or ~/.aws/credentials: list them with "
        "`aws configure list-profiles`, or create it with `aws configure --profile nope`",
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_config_env_lists_the_known_ones(command: str, bare_aws: Path) -> None:
    result = _run(command, "--stack", "clockless-dev", "--config-env", "staging")

    _assert_one_line(result, "samconfig.toml has no environment 'staging' (--config-env); it has: default, prod")


@pytest.fixture
def moto_aws(bare_aws: Path) -> Iterator[None]:
    with mock_aws():
        yield


@pytest.mark.parametrize("command", COMMANDS)
def test_a_stack_that_does_not_exist_is_named_with_the_region(command: str, moto_aws: None) -> None:
    result = _run(command, "--stack", "clockless-staging")

    _assert_one_line(
        result,
        "stack 'clockless-staging' not found in us-east-1 (region from samconfig.toml [default]): check --stack "
        "(samconfig.toml [default] deploys 'clockless-dev') and --region",
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_an_aws_endpoint_that_does_not_answer(command: str, bare_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = _closed_port()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")

    result = _run(command, "--stack", "clockless-dev")

    _assert_one_line(
        result,
        f"stack 'clockless-dev' in us-east-1 does not answer at http://127.0.0.1:{port}/: check the network, the "
        "region, and for the local runtime that `clockless local status` says it runs",
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_a_local_endpoint_that_does_not_answer(command: str) -> None:
    port = _closed_port()

    result = _run(command, "--endpoint", f"http://127.0.0.1:{port}")

    _assert_one_line(
        result,
        f"nothing answers at http://127.0.0.1:{port}: start the embedded DynamoDB with `make local-up` "
        "(`clockless local status` shows where it listens)",
    )


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("endpoint", ["localhost:8765", "127.0.0.1", "http://"])
def test_a_local_endpoint_that_is_not_a_url(command: str, endpoint: str) -> None:
    result = _run(command, "--endpoint", endpoint)

    _assert_one_line(
        result, f"--endpoint {endpoint!r} is not a URL: write it with its scheme (e.g. http://127.0.0.1:8765)"
    )


def test_local_up_on_a_taken_port_says_so_and_starts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "STATE_FILE", tmp_path / "local.json")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        result = CliRunner().invoke(app, ["local", "up", "--port", str(port)])
        # `make local-up PORT=...` sets CLOCKLESS_UNDER_MAKE: the error says the make variable
        monkeypatch.setenv(UNDER_MAKE, "1")
        under_make = CliRunner().invoke(app, ["local", "up", "--port", str(port)])

    _assert_one_line(
        result, f"port {port} on 127.0.0.1 is taken by another program: choose another, e.g. --port {port + 1}"
    )
    _assert_one_line(
        under_make, f"port {port} on 127.0.0.1 is taken by another program: choose another, e.g. PORT={port + 1}"
    )
    assert not (tmp_path / "local.json").exists()


def test_stack_settings_come_from_samconfig_then_variables_then_flags(
    bare_aws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _samconfig(
        bare_aws,
        'version = 0.1\n[default.global.parameters]\nregion = "eu-west-3"\nprofile = "dev"\n'
        '[default.deploy.parameters]\nstack_name = "clockless-dev"\n'
        '[prod.global.parameters]\nregion = "eu-west-1"\n[prod.deploy.parameters]\nprofile = "prod"\n',
    )

    def resolved(config_env: str = "default", **flags: str | None) -> tuple[str | None, str, str | None, str]:
        connection = resolve_connection(
            "s",
            region=flags.get("region"),
            profile=flags.get("profile"),
            samconfig=config,
            config_env=config_env,
        )
        return connection.region.value, connection.region.source, connection.profile.value, connection.profile.source

    assert resolved() == ("eu-west-3", "samconfig.toml [default]", "dev", "samconfig.toml [default]")
    assert resolved("prod") == ("eu-west-1", "samconfig.toml [prod]", "prod", "samconfig.toml [prod]")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    monkeypatch.setenv("AWS_PROFILE", "ops")
    assert resolved() == ("ap-south-1", "AWS_DEFAULT_REGION", "ops", "AWS_PROFILE")
    monkeypatch.setenv("AWS_REGION", "sa-east-1")
    assert resolved()[:2] == ("sa-east-1", "AWS_REGION")
    assert resolved(region="us-west-2", profile="x") == ("us-west-2", "--region", "x", "--profile")


def test_the_project_samconfig_region_reaches_the_session(moto_aws: None) -> None:
    boto3.Session(region_name="us-east-1").client("cloudformation").create_stack(
        StackName="clockless-dev", TemplateBody='{"Resources": {"T": {"Type": "AWS::SNS::Topic"}}}'
    )

    result = CliRunner().invoke(app, ["status", "--stack", "clockless-dev", "-t", str(DEFAULT_TEMPLATE)])

    # The stack exists in samconfig.toml's region, so what is refused is its content, in one line.
    _assert_one_line(result, "stack 'clockless-dev' has no LedgerTable: deploy the current template.yaml first")


@pytest.mark.parametrize(
    ("code", "message", "line"),
    [
        (
            "ExpiredToken",
            "The security token included in the request is expired",
            f"AWS refused the credentials for stack 'x' in us-east-1 (ExpiredToken): {CREDENTIALS_HINT}",
        ),
        (
            "InvalidClientTokenId",
            "The security token is invalid.",
            f"AWS refused the credentials for stack 'x' in us-east-1 (InvalidClientTokenId): {CREDENTIALS_HINT}",
        ),
        (
            "AccessDenied",
            "User: arn:aws:iam::1:user/dev is not authorized\n to perform: lambda:InvokeFunction",
            "access denied on stack 'x' in us-east-1: User: arn:aws:iam::1:user/dev is not authorized to perform: "
            "lambda:InvokeFunction; use a profile allowed to operate it",
        ),
        ("ThrottlingException", "Rate exceeded", "stack 'x' in us-east-1: ThrottlingException: Rate exceeded"),
    ],
)
def test_refusals_by_aws_are_one_line(code: str, message: str, line: str) -> None:
    with pytest.raises(OperationError) as raised, reported("stack 'x' in us-east-1"):
        raise ClientError({"Error": {"Code": code, "Message": message}}, "Invoke")

    assert str(raised.value) == line
