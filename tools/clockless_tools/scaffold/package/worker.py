"""A fanned-out job's `worker.py`: the SQS worker the kit builds from the coordinator's `FanOut`."""

from __future__ import annotations

from typing import Final

WORKER: Final = '''"""__JOB__'s worker: applies a fanned-out tick's partitions (SQS, one message a run)."""

from __future__ import annotations

from __PACKAGE__.handler import item_store, work
from __PACKAGE__.repository import DuePartitionWork

lambda_handler = work.worker(lambda: DuePartitionWork(item_store()))
'''
