"""The job's `handler.py`: the tick's handler, which applies the due items itself, or with `--fan-out`
the coordinator that starts the tick's partitions."""

from __future__ import annotations

from typing import Final

# The settings and store every handler caches, and the handler's head: one copy for both kinds.
_HANDLER_BODY: Final = """\n
@functools.cache
def settings() -> __STEM__Settings:
    return __STEM__Settings.from_env()


@functools.cache
def item_store() -> DynamoItemStore:
    return DynamoItemStore(settings().items_table)


@job.handler
def lambda_handler(run: JobRun) -> Mapping[str, Any]:
    # The tick's scheduled time, never the wall clock: a late or replayed delivery applies exactly
    # what its tick would have (rule no-wall-clock).
"""

HANDLER: Final = '''"""__JOB__: the tick's handler. It applies every item due by the tick's scheduled time."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from clockless import JobRun, ScheduledJob
from __PACKAGE__.logic import apply_due
from __PACKAGE__.repository import DynamoItemStore
from __PACKAGE__.settings import __STEM__Settings

JOB_NAME = "__JOB__"
job = ScheduledJob(JOB_NAME)

__HANDLER_BODY__    # Each row on its own (run.each): a bad row fails alone, the tick settles by tolerated_failures.
    return apply_due(item_store(), as_of=run.tick.scheduled_time, each=run.each).as_summary()
'''

FANOUT_HANDLER: Final = '''"""__JOB__: the tick's coordinator. It fans the tick out, one message per due-index shard;
`__PACKAGE__.worker` applies the items."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from clockless import JobRun, ScheduledJob
from clockless.fanout import FanOut
from __PACKAGE__.repository import DUE_PARTITIONS, DynamoItemStore, tick_params
from __PACKAGE__.settings import __STEM__Settings

JOB_NAME = "__JOB__"
job = ScheduledJob(JOB_NAME)
work = FanOut(job, partitions=DUE_PARTITIONS)

__HANDLER_BODY__    return work.start(run, params=tick_params(run.tick.scheduled_time))
'''


def handler(*, fan_out: bool) -> str:
    """The handler's text with placeholders: the coordinator when the job fans out."""
    return (FANOUT_HANDLER if fan_out else HANDLER).replace("\n__HANDLER_BODY__", _HANDLER_BODY)
