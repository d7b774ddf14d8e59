"""What every command shares: an unknown option is answered with the nearest real one or the
command's options, an error under `make` names the make variable, a time error carries one example."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from clockless_tools.cli.app import app
from clockless_tools.cli.common import UNDER_MAKE, flag, parse_time
from clockless_tools.operations.targets import one_line


def _error(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()  # one line, not Typer's box
    assert line.startswith("error: ")
    return line


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(group, TyperGroup):
        for name, command in group.commands.items():
            yield from _commands(command, (*path, name))
    else:
        yield path


def test_every_usage_error_of_every_command_is_one_line() -> None:
    """A misspelt option, a missing argument, a bad value, an unknown command: `error: ...; see
    `<command> --help`` on one line, as every other error (Typer boxes them in 6-7 lines)."""
    commands = list(_commands(typer.main.get_command(app)))
    assert len(commands) > 20

    for path in commands:
        line = _error([*path, "--no-such-option-anywhere"])
        assert line.startswith("error: No such option: --no-such-option-anywhere"), line
        assert line.endswith(f"{' '.join(path)} --help`"), line
    assert _error(["run-now"]).startswith("error: Missing argument 'job'; see `")
    assert _error(["status", "--window-days", "x"]).startswith("error: Invalid value for '--window-days': ")
    assert _error(["status", "--window-days", "100000"]).startswith(
        "error: Invalid value for '--window-days': Input should be less than or equal to 366"
    )
    assert _error(["no-such-command"]).startswith("error: No such command 'no-such-command'; see `")


def test_a_misspelt_option_gets_the_nearest_real_one() -> None:
    assert "No such option: --jsno. Did you mean --json?" in _error(["status", "--jsno"])
    assert "No such option: --form. Did you mean --from?" in _error(["backfill", "j", "--form", "x", "--to", "y"])


def test_an_option_like_no_other_gets_the_commands_options_not_a_far_guess() -> None:
    message = " ".join(_error(["status", "--since", "1"]).split())

    assert "--json" not in message.split("takes:")[0]  # click offered --json for --since
    assert "status takes: --config-env, --config-file, --endpoint, --help, --html, --json" in message


def test_under_make_an_error_names_the_make_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert flag("--stack") == "--stack"
    monkeypatch.setenv(UNDER_MAKE, "1")

    assert (flag("--stack"), flag("--from"), flag("--at")) == ("STACK=", "FROM=", "--at")
    result = CliRunner().invoke(app, ["backfill", "j", "--from", "yesterday", "--to", "2026-11-29T00:00:00Z"])
    assert result.stderr.startswith("error: FROM= is not an ISO-8601 time: 'yesterday'")


@pytest.mark.parametrize("value", ["2026-11-30T00:00:00", "yesterday", "", "2026-11-30T00:00:00+25:00"])
def test_a_time_error_carries_one_example(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - typer.Exit, after the line is printed
        parse_time(value, "--from")

    line = capsys.readouterr().err
    assert line.count("\n") == 1
    assert len(re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line)) == 1, line


def test_a_time_with_an_offset_is_used_in_utc() -> None:
    assert parse_time("2026-11-30T00:00:00+01:00", "--from").isoformat() == "2026-11-29T23:00:00+00:00"


def test_an_error_with_an_embedded_traceback_becomes_its_exception_in_one_line() -> None:
    error = (
        "BatchProcessingError: All records failed processing. 1 individual errors logged separately below.\n\n"
        "Traceback (most recent call last):\n"
        '  File "/x/base.py", line 564, in _process_record\n'
        "    result = self.handler(record=data)\n"
        "ConnectionError: sessions index unreachable\n"
        "  while reading the first page\n"
    )

    assert one_line(error) == (
        "BatchProcessingError: All records failed processing. 1 individual errors logged separately below. "
        "ConnectionError: sessions index unreachable while reading the first page"
    )
