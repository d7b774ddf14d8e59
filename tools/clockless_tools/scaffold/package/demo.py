"""The job's `demo.py`: the seed `make run` and `clockless local seed` load, and the bad rows
`clockless simulate --bad-rows` plants."""

from __future__ import annotations

from typing import Final

DEMO: Final = '''"""Demo data for `make run` and `clockless local seed`: items across tenants, due from two days
before the range to a day after it, so every tick finds some. Written through this job's own
repository; the simulator finds this module by its name (docs/adding-a-job.md)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timedelta

from clockless.dynamo import bucketed_key
from __PACKAGE__.logic import Item
from __PACKAGE__.repository import TENANT_BUCKETS, DynamoItemStore, ItemModel, item_key
from __PACKAGE__.settings import __STEM__Settings

ITEMS_PER_TENANT = 40


def plan_items(tenants: int, rng: random.Random, *, start: datetime, end: datetime) -> list[Item]:
    earliest, span = start - timedelta(days=2), int((end - start + timedelta(days=3)).total_seconds() // 60)
    return [
        Item(f"tenant-{t + 1:02d}", f"item-{i + 1:05d}", earliest + timedelta(minutes=rng.randint(0, span)))
        for t in range(tenants)
        for i in range(ITEMS_PER_TENANT)
    ]


def seed(*, environ: Mapping[str, str], tenants: int, rng: random.Random, start: datetime, end: datetime) -> str:
    items = plan_items(tenants, rng, start=start, end=end)
    DynamoItemStore(__STEM__Settings.from_env(environ).items_table).save_items(items)
    return f"{len(items)} items"


def bad_rows(*, environ: Mapping[str, str], start: datetime, end: datetime) -> list[str]:
    """Rows this job cannot use, for `clockless simulate --bad-rows`: a due item whose due time is no
    instant (hour 25), as another client might write it. It fails alone; returns its key as the kit
    names it in the ledger (and the work DLQ)."""
    bad = Item("tenant-bad", "item-hour-25", start - timedelta(days=2))
    # The store binds the model to the table the environment names.
    DynamoItemStore(__STEM__Settings.from_env(environ).items_table).save_items([bad])
    ItemModel(bucketed_key(bad.tenant_id, bad.item_id, TENANT_BUCKETS), bad.item_id).update(
        # Only the row just written: a key this hook got wrong fails here instead of planting nothing.
        actions=[ItemModel.due_at.set(f"{bad.due_at:%Y-%m-%d}T00:00:00+25:00")],
        condition=ItemModel.item_id.exists(),
    )
    return [item_key(bad)]
'''
