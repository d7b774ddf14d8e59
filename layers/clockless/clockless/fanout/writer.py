"""The batch writer: items packed whole into conditional `TransactWriteItems`, lanes in parallel.

Each transaction holds at most 99 item actions plus the accounting action (the lane's counters,
or a replay's), so what it applied is counted in the same atomic write. It carries a
deterministic `ClientRequestToken` (a hash of its content): a resend of a transaction DynamoDB
applied, by botocore after a lost answer or by our own backoff, is answered from the token for 10
minutes and counted once. A cancelled transaction is read action by action: an item whose
condition failed is already done (removed, counted); a conflict or throttle is resent after
backoff; any other reason fails that item alone (to the work DLQ, counted failed). A request
refused whole by validation is bisected until the failing item is alone.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from clockless.fanout.records import Counters

MAX_ITEM_ACTIONS: Final = 99
DEFAULT_MAX_ATTEMPTS: Final = 8
BACKOFF_BASE_SECONDS: Final = 0.05
BACKOFF_CAP_SECONDS: Final = 2.0
TOKEN_LENGTH: Final = 36

ALREADY_DONE_REASON: Final = "ConditionalCheckFailed"
# Per-action reasons worth resending the same items for.
RETRY_REASONS: Final = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}
)
# Whole-request errors left after botocore's own retries, safe to resend: the token makes a
# resend of an applied transaction a no-op.
RETRY_ERRORS: Final = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One item's actions (applied together), its key, and the item for the DLQ."""

    key: str
    actions: list[dict[str, Any]]
    item: Any


class Accounting(Protocol):
    """The action(s) that count a transaction's items, in that transaction."""

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]: ...


FailureSink = Callable[[list[Entry], str], None]


class WorkThrottled(RuntimeError):
    """A transaction stayed throttled or in conflict through every attempt; the message is redelivered."""


class AccountingConflict(RuntimeError):
    """The accounting action's condition failed: the counted state is not what this writer read."""


def backoff_seconds(attempt: int) -> float:
    """Full jitter (base 50 ms, cap 2 s): lanes and workers that collided spread out instead of
    retrying in step."""
    return random.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt))  # noqa: S311


def client_request_token(transact_items: list[dict[str, Any]]) -> str:
    """The same content, the same token: a resend is recognised, whoever sends it."""
    canonical = json.dumps(transact_items, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:TOKEN_LENGTH]


def pack(entries: Sequence[Entry], limit: int = MAX_ITEM_ACTIONS) -> list[list[Entry]]:
    """Items whole, in order, into batches of at most `limit` actions."""
    batches: list[list[Entry]] = []
    current: list[Entry] = []
    size = 0
    for entry in entries:
        if current and size + len(entry.actions) > limit:
            batches.append(current)
            current, size = [], 0
        current.append(entry)
        size += len(entry.actions)
    if current:
        batches.append(current)
    return batches


@dataclass
class BatchWriter:
    client: Any
    accounting: Accounting
    on_failed: FailureSink
    concurrency: int = 4
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    sleep: Callable[[float], None] = time.sleep
    # Transactions sent (resends included), for the logs and the bench; lanes count under a lock.
    transactions: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def apply(self, entries: Sequence[Entry]) -> Counters:
        """Apply every entry once, in up to `concurrency` lanes; the counters of what happened."""
        total = Counters()
        fits = [entry for entry in entries if 0 < len(entry.actions) <= MAX_ITEM_ACTIONS]
        nothing_to_do = [entry.key for entry in entries if not entry.actions]
        too_big = [entry for entry in entries if len(entry.actions) > MAX_ITEM_ACTIONS]
        if too_big:
            self.on_failed(too_big, f"an item needs at most {MAX_ITEM_ACTIONS} actions to fit one transaction")
        if too_big or nothing_to_do:
            # Found, with nothing to write (already done) or too much (failed): counted all the same.
            total.add(self._apply([], 0, done=nothing_to_do, failed=[entry.key for entry in too_big]))
        batches = pack(fits)
        lanes = min(self.concurrency, len(batches))
        if lanes <= 1:
            # One lane runs in the caller's thread (and the fault injector's, which is per thread).
            for batch in batches:
                total.add(self._apply(batch, lane=0))
            return total
        errors: list[BaseException] = []
        with ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="clockless-lane") as pool:
            futures = [pool.submit(self._run_lane, lane, batches[lane::lanes]) for lane in range(lanes)]
            for future in futures:
                try:
                    total.add(future.result())
                except BaseException as error:  # each lane's work is counted; the first error is raised
                    errors.append(error)
        if errors:
            raise errors[0]
        return total

    def _run_lane(self, lane: int, batches: list[list[Entry]]) -> Counters:
        counters = Counters()
        for batch in batches:
            counters.add(self._apply(batch, lane))
        return counters

    def _send(self, transact_items: list[dict[str, Any]]) -> None:
        if not transact_items:
            return
        with self._lock:
            self.transactions += 1
        self.client.transact_write_items(
            TransactItems=transact_items, ClientRequestToken=client_request_token(transact_items)
        )

    def _apply(
        self, batch: list[Entry], lane: int, *, done: list[str] | None = None, failed: list[str] | None = None
    ) -> Counters:
        """One batch until every item is applied, found done or failed; the counters (with the
        `done` and `failed` keys handed in, counted in its transaction)."""
        done = list(done or [])
        failed = list(failed or [])
        live = list(batch)
        for attempt in range(self.max_attempts):
            item_actions = [action for entry in live for action in entry.actions]
            transact_items = item_actions + self.accounting.actions(lane, [e.key for e in live], done, failed)
            try:
                self._send(transact_items)
                return Counters(applied=len(live), already_done=len(done), failed=len(failed))
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                if code == "TransactionCanceledException":
                    if self._settle(error, live, len(item_actions), done, failed):
                        self._backoff(attempt)
                elif code == "ValidationException" and live:
                    if len(live) > 1:
                        return self._bisect(live, lane, done, failed)
                    message = error.response.get("Error", {}).get("Message", "")
                    self.on_failed(live, f"{code}: {message}")
                    failed.append(live[0].key)
                    live = []
                elif code in RETRY_ERRORS:
                    self._backoff(attempt)
                else:
                    raise
            except BotocoreConnectionError:
                self._backoff(attempt)
        raise WorkThrottled(
            f"a transaction of {len(live)} item(s) was throttled or in conflict {self.max_attempts} times; "
            "the message is redelivered and resumes from the stored cursor"
        )

    def _settle(
        self, error: ClientError, live: list[Entry], item_count: int, done: list[str], failed: list[str]
    ) -> bool:
        """Read a cancelled transaction's reasons; update `live`, `done`, `failed` in place.
        True when what is left should be resent after a backoff (conflict or throttle)."""
        reasons = [dict(reason or {}) for reason in error.response.get("CancellationReasons") or []]
        if not reasons:
            raise error
        codes = [str(reason.get("Code") or "None") for reason in reasons]
        retry = False
        keep: list[Entry] = []
        newly_failed: list[tuple[Entry, str]] = []
        offset = 0
        for entry in live:
            span = range(offset, offset + len(entry.actions))
            offset = span.stop
            mine = [(codes[i], reasons[i].get("Message", "")) for i in span if i < len(codes)]
            if any(code == ALREADY_DONE_REASON for code, _ in mine):
                done.append(entry.key)
            elif any(code in RETRY_REASONS for code, _ in mine):
                retry = True
                keep.append(entry)
            elif any(code != "None" for code, _ in mine):
                newly_failed.append((entry, next(f"{c}: {m}" for c, m in mine if c != "None")))
            else:
                keep.append(entry)
        accounting = codes[item_count:]
        if ALREADY_DONE_REASON in accounting:
            raise AccountingConflict(f"the accounting action's condition failed: {accounting}")
        if any(code in RETRY_REASONS for code in accounting):
            retry = True
        elif any(code != "None" for code in accounting):
            raise error
        for entry, reason in newly_failed:
            # To the DLQ before the transaction that counts it: a crash in between sends it again
            # (replaying the copy changes nothing), never loses it.
            self.on_failed([entry], reason)
            failed.append(entry.key)
        live[:] = keep
        return retry

    def _bisect(self, batch: list[Entry], lane: int, done: list[str], failed: list[str]) -> Counters:
        """Refused whole, with no per-item reasons: halve until the item refused is alone."""
        middle = len(batch) // 2
        # What this batch already learnt is counted with the first half.
        counters = self._apply(batch[:middle], lane, done=done, failed=failed)
        counters.add(self._apply(batch[middle:], lane))
        return counters

    def _backoff(self, attempt: int) -> None:
        self.sleep(backoff_seconds(attempt))
