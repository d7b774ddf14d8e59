"""`TargetOptions`: the seven options that say where an operating command acts, declared once and
taken by every command that reads or changes a deployment, in one order, arriving as one object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.cli.target import TargetOptions, target_options

TARGET_OPTIONS = ["--template", "--stack", "--region", "--profile", "--config-env", "--config-file", "--endpoint"]
OPERATING = {"status", "backfill", "run-now", "pause", "resume", "drift", "work show", "work redrive", "shards check"}


def _leaves(command: Any, path: tuple[str, ...] = ()) -> dict[str, Any]:
    if hasattr(command, "commands"):
        return {k: v for name, sub in command.commands.items() for k, v in _leaves(sub, (*path, name)).items()}
    return {" ".join(path): command}


def test_every_operating_command_takes_the_same_target_options_in_one_order() -> None:
    commands = _leaves(typer.main.get_command(app))

    taking = {
        path: [opt for param in command.params for opt in param.opts if opt in TARGET_OPTIONS]
        for path, command in commands.items()
        if any("--stack" in param.opts for param in command.params)
    }

    assert set(taking) == OPERATING
    assert all(options == TARGET_OPTIONS for options in taking.values())


def test_the_options_given_arrive_as_one_target_options_object(tmp_path: Path) -> None:
    # Given a command that declares where it acts as one TargetOptions
    seen: list[TargetOptions] = []
    probe = typer.Typer()

    @probe.command()
    @target_options
    def look(job: str, *, where: TargetOptions) -> None:
        seen.append(where)

    # When it is called with some of the options
    done = CliRunner().invoke(probe, ["nightly", "--stack", "prod-stack", "--region", "eu-west-1", "-t", "x.yaml"])

    # Then they arrive together, the rest at their defaults
    assert done.exit_code == 0, done.output
    assert seen == [TargetOptions(template=Path("x.yaml"), stack="prod-stack", region="eu-west-1")]


def test_a_command_without_one_target_options_parameter_or_with_its_own_is_refused() -> None:
    def no_target(job: str) -> None: ...

    def own_stack(stack: str, *, where: TargetOptions) -> None: ...

    with pytest.raises(TypeError, match="no_target needs one keyword-only parameter annotated TargetOptions"):
        target_options(no_target)
    with pytest.raises(TypeError, match="own_stack declares target options itself: stack"):
        target_options(own_stack)
