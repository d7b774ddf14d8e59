"""The root of the developer tools' errors, so a command catches every one of them with one `except`.

The tools are never deployed, so their root is not the kit's: `except ToolError` catches what a
tool found wrong (a template, an option, a project), `except ClocklessError` what the kit found
(a tick, a schedule). A tool error that reports a kit error derives from both
(`ScheduleDefinitionError` is a `TemplateError` and a `ScheduleExpressionError`).
"""

from __future__ import annotations


class ToolError(Exception):
    """Every error a tool raises on purpose; a command prints its message and exits 1. Each
    subclass also keeps the built-in base it always had (`ValueError` for bad input, `RuntimeError`
    for a state the caller must react to), so existing handlers still catch it."""
