"""Fan-out: a tick too big for one Lambda, split into partitions run by SQS-fed workers, each item
applied exactly once and counted in the run ledger. docs/fan-out.md has the design, and its
"The code" section the module of each step.

The names below are imported on first use (PEP 562), so a kit module that needs only the state
machine (`clockless.overlap` reads `clockless.state`) does not load the whole fan-out, and
no circle forms through this package."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clockless.fanout.coordinator import FanOut as FanOut
    from clockless.fanout.messages import MalformedMessageError as MalformedMessageError
    from clockless.fanout.messages import WorkMessage as WorkMessage
    from clockless.fanout.types import Counters as Counters
    from clockless.fanout.work import Page as Page
    from clockless.fanout.work import PartitionWork as PartitionWork

_EXPORTS = {
    "Counters": "clockless.fanout.types",
    "FanOut": "clockless.fanout.coordinator",
    "MalformedMessageError": "clockless.fanout.messages",
    "Page": "clockless.fanout.work",
    "PartitionWork": "clockless.fanout.work",
    "WorkMessage": "clockless.fanout.messages",
}

__all__ = ["Counters", "FanOut", "MalformedMessageError", "Page", "PartitionWork", "WorkMessage"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
