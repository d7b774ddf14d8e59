"""Session cleanup's worker: applies a fanned-out tick's partitions (SQS, one message a run), up
to 99 conditional deletes per transaction, each only if the session is still empty."""

from __future__ import annotations

from session_cleanup.handler import session_store, work
from session_cleanup.repository import SessionPartitionWork

lambda_handler = work.worker(lambda: SessionPartitionWork(session_store()))
