"""Window generation's worker: applies a fanned-out tick's partitions (SQS, one message a run),
each due program's windows and roll in one conditional transaction with up to 48 others."""

from __future__ import annotations

from window_generation.handler import program_store, work
from window_generation.repository import WindowPartitionWork

lambda_handler = work.worker(lambda: WindowPartitionWork(program_store()))
