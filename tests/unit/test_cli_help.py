"""The command line works in pipes and CI: every option explains itself with an example, there is
`--version`, and spans read as an operator says them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from importlib.metadata import version
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.operations.spans import format_span

# Typer's own options: help, and shell completion (left on, as Typer's default).
BUILT_IN = {"help", "install_completion", "show_completion"}


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield " ".join(path), command


def _options() -> list[tuple[str, Any]]:
    return [
        (f"{path} {option.opts[0]}", option)
        for path, command in _commands(typer.main.get_command(app))
        for option in command.params
        if option.param_type_name == "option" and option.name not in BUILT_IN
    ]


def test_every_option_has_help_and_every_valued_one_an_example() -> None:
    options = _options()
    assert len(options) > 50  # the walk reaches every command group

    undocumented = [name for name, option in options if not option.help]
    without_example = [
        name for name, option in options if not option.is_flag and "e.g. " not in (option.help or "").lower()
    ]

    assert undocumented == []
    assert without_example == []


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])

    assert (result.exit_code, result.stdout) == (0, f"clockless {version('clockless')}\n")


@pytest.mark.parametrize(
    ("span", "shown"),
    [
        (timedelta(days=50), "50 d"),
        (timedelta(hours=3), "3 h"),
        (timedelta(days=1, hours=6, minutes=5), "1 d 6 h"),
        (timedelta(minutes=90), "1 h 30 min"),
        (timedelta(seconds=45), "45 s"),
        (timedelta(0), "0 s"),
        (timedelta(hours=-2), "-2 h"),
    ],
)
def test_spans_read_as_an_operator_says_them(span: timedelta, shown: str) -> None:
    assert format_span(span) == shown


@pytest.mark.parametrize("command", [[], ["backfill"], ["status"], ["local", "status"], ["pause"]])
def test_flags_show_no_value_type_in_help(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "160"})

    assert result.exit_code == 0
    assert "--help" in result.stdout
    assert "<bool>" not in result.stdout
