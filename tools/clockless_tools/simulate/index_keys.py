"""The index keys each partition of a fanned-out job reads in a replay: 1, not the jobs' own 16.

Window generation writes 512 due-index keys over 32 partitions and session cleanup 256 over 16
(docs/fan-out.md#index-keys-and-partitions): each partition run makes a Query per key and one or
two more per key for the rows outside the due range, nearly all of which find nothing in the demo
data. At the jobs' own count those Queries took about three times `make run`'s CPU, and at two
keys a partition still a few per cent more than one (docs/simulation.md#index-keys), against a
budget of none. So a replay that seeds its own tables runs the jobs at `keys_per_partition` keys
per partition (`clockless_tools.simulate.request.DEFAULT_KEYS_PER_PARTITION`; the seeding and every
tick alike, both replays), and the report says so; `--keys-per-partition 2` runs every fault past
a partition's keys. A replay against a running DynamoDB (`--endpoint`) reads what `clockless local
seed` wrote, at the jobs' own counts, and changes nothing.
"""

from __future__ import annotations

import importlib
from typing import Final

from clockless_tools.simulate.request import SimulationInputError

# (the repository module, its key count's name, its partition count's name) of each job that writes
# more index keys than it runs partitions.
JOBS: Final = (
    ("window_generation.repository", "DUE_INDEX_KEYS", "DUE_INDEX_SHARDS"),
    ("session_cleanup.repository", "EMPTY_INDEX_KEYS", "EMPTY_INDEX_SHARDS"),
)


def own_keys_per_partition() -> dict[str, int]:
    """Each job's own index keys per partition, by its repository module."""
    counts = {}
    for module_name, keys, partitions in JOBS:
        module = importlib.import_module(module_name)
        counts[module_name] = getattr(module, keys) // getattr(module, partitions)
    return counts


def apply(keys_per_partition: int | None) -> str | None:
    """Run the jobs at `keys_per_partition` in this process (None: at their own); what the report says."""
    if keys_per_partition is None:
        return None
    own = " and ".join(str(count) for count in own_keys_per_partition().values())
    run_at(keys_per_partition)
    return f"index keys: {keys_per_partition} per partition, not the jobs' own {own} (docs/simulation.md#index-keys)"


def run_at(keys_per_partition: int) -> None:
    """Set every job's key count to `keys_per_partition` times its partitions, in this process."""
    if keys_per_partition < 1:
        raise SimulationInputError(f"--keys-per-partition {keys_per_partition}: a partition reads one key or more")
    for module_name, keys, partitions in JOBS:
        module = importlib.import_module(module_name)
        setattr(module, keys, keys_per_partition * getattr(module, partitions))
