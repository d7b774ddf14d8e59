"""What counts a transaction's items, in that transaction: a partition run's lane counters and
failed items, or a replay's move of its items out of `failed_items`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clockless.fanout.records import PartitionRecords


class PartitionAccounting:
    """A partition run counts in its lane's record, and failed items on the partition record."""

    def __init__(self, records: PartitionRecords) -> None:
        self.records = records

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]:
        # Already-done items are counted with the cursor (PartitionRecords.store_cursor), not here.
        actions = []
        if applied:
            actions.append(self.records.lane_counter(lane, len(applied)))
        if failed:
            actions.append(self.records.failed_record(list(failed)))
        return actions


class ReplayAccounting:
    """A replay moves its items out of `failed_items`; items failing again stay there."""

    def __init__(self, records: PartitionRecords) -> None:
        self.records = records

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]:
        keys = [*applied, *already_done]
        return [self.records.replay_counter(keys, len(applied), len(already_done))] if keys else []
