"""Fan-out: a tick too big for one Lambda, split into partitions run by SQS-fed workers, each item
applied exactly once and counted in the run ledger. docs/fan-out.md has the design, and its
"The code" section the module of each step."""

from __future__ import annotations

from clockless.fanout.coordinator import FanOut
from clockless.fanout.messages import MalformedMessageError, WorkMessage
from clockless.fanout.types import Counters
from clockless.fanout.work import Page, PartitionWork, ReadsOutside

__all__ = ["Counters", "FanOut", "MalformedMessageError", "Page", "PartitionWork", "ReadsOutside", "WorkMessage"]
