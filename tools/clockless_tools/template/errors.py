"""The one error the template package raises: loader.py and extensions.py both raise it, so it lives
below them both (and loader.py re-exports it, where the tools have always imported it from)."""

from __future__ import annotations

from clockless_tools.errors import ToolError


class TemplateError(ToolError, ValueError):
    """template.yaml is unreadable or lacks something the tools rely on; the message says where."""
