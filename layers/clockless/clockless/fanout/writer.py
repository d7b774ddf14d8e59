"""The batch writer: items packed whole into conditional `TransactWriteItems`, lanes in parallel.

Each transaction holds at most 99 item actions plus the accounting action (the lane's counters,
or a replay's), so what it applied is counted in the same atomic write. It carries a
deterministic `ClientRequestToken` (a hash of its content): a resend of a transaction DynamoDB
applied, by botocore after a lost answer or by our own backoff, is answered from the token for 10
minutes and counted once. A cancelled transaction is read action by action: an item whose
condition failed is already done (removed, counted); a conflict or throttle is resent after
backoff; any other reason fails that item alone (to the work DLQ, counted failed). A request
refused whole by validation is bisected until the failing item is alone.

A throttle (a refused request, or `ThrottlingError` among a cancellation's reasons) is never a
failure: it is waited out with backoff for as long as the attempt's budget lasts, then
`BudgetSpent` hands the rest to a continuation (clockless.throttle). Transactions go out paced
(clockless.fanout.pacing), so a worker offers its shard key no more than it can take. When to
resend, and how often, is clockless.fanout.retry's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as BotocoreConnectionError

from clockless.errors import ClocklessError
from clockless.fanout.pacing import Pacer
from clockless.fanout.retry import (
    MAX_CONFLICT_ATTEMPTS,
    RETRY_REASONS,
    TRANSIENT_ERRORS,
    WorkRetriesSpent,
    conflict_backoff_seconds,
)
from clockless.fanout.types import Counters
from clockless.items import REASON_TOO_BIG, REASON_WRITE, FailedItem, short
from clockless.throttle import (
    SYSTEM_CLOCK,
    THROTTLE_ERRORS,
    THROTTLE_REASONS,
    Budget,
    BudgetSpent,
    Clock,
    cancellation_codes,
    cancellation_reasons,
    client_request_token,
    describe_throttle,
    throttled_tables,
)
from clockless.throttle import backoff_seconds as throttle_backoff_seconds

MAX_ITEM_ACTIONS: Final = 99
ALREADY_DONE_REASON: Final = "ConditionalCheckFailed"
# What made a cancelled transaction worth resending.
_THROTTLE: Final = "throttle"
_CONFLICT: Final = "conflict"


@dataclass(frozen=True, slots=True)
class Entry:
    """One item's actions (applied together), its key, and the item for the DLQ; `failure`: the
    item failed before any write (its row did not decode, its writes could not be worked out)."""

    key: str
    actions: list[dict[str, Any]]
    item: Any
    failure: FailedItem | None = None

    def failed(self, reason: str, message: str) -> Entry:
        return replace(self, failure=FailedItem(self.key, reason, short(message)))


class Accounting(Protocol):
    """The action(s) that count a transaction's items, in that transaction."""

    def actions(
        self, lane: int, applied: Sequence[str], already_done: Sequence[str], failed: Sequence[str]
    ) -> list[dict[str, Any]]: ...


# Failed entries (each with its `failure`) and the first one's message.
FailureSink = Callable[[list[Entry], str], None]


class AccountingConflict(ClocklessError, RuntimeError):
    """The accounting action's condition failed: the counted state is not what this writer read."""


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
    max_attempts: int = MAX_CONFLICT_ATTEMPTS
    clock: Clock = SYSTEM_CLOCK
    # How long throttles may be waited out (None: as long as a Lambda attempt can last).
    budget: Budget | None = None
    # Paces transactions at `units_per_item` write units per item (None: unpaced).
    pacer: Pacer | None = None
    units_per_item: int = 0
    # Transactions sent (resends included), for the logs and the bench; lanes count under a lock.
    transactions: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def apply(self, entries: Sequence[Entry]) -> Counters:
        """Apply every entry once, in up to `concurrency` lanes; the counters of what happened."""
        total = Counters()
        live = [entry for entry in entries if entry.failure is None]
        fits = [entry for entry in live if 0 < len(entry.actions) <= MAX_ITEM_ACTIONS]
        nothing_to_do = [entry.key for entry in live if not entry.actions]
        too_big_text = f"an item needs at most {MAX_ITEM_ACTIONS} actions to fit one transaction"
        failed = [entry for entry in entries if entry.failure is not None] + [
            entry.failed(REASON_TOO_BIG, f"{too_big_text}, got {len(entry.actions)}")
            for entry in live
            if len(entry.actions) > MAX_ITEM_ACTIONS
        ]
        if failed:
            self.on_failed(failed, failed[0].failure.message if failed[0].failure else too_big_text)
        if failed or nothing_to_do:
            # Found, with nothing to write (already done) or failed before writing: counted all the
            # same. The accounting's condition names each failed key, and DynamoDB refuses an
            # expression over 4 KB: a transaction's worth of keys at a time (a page of bad rows
            # would otherwise be refused whole, and its partition never get past it).
            keys = [entry.key for entry in failed]
            chunks = [keys[start : start + MAX_ITEM_ACTIONS] for start in range(0, len(keys), MAX_ITEM_ACTIONS)]
            total.add(self._apply([], 0, done=nothing_to_do, failed=chunks[0] if chunks else []))
            for chunk in chunks[1:]:
                total.add(self._apply([], 0, failed=chunk))
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
            # A lane's real error before another's spent budget: the budget only hands the work on.
            raise next((e for e in errors if not isinstance(e, BudgetSpent)), errors[0])
        return total

    def _run_lane(self, lane: int, batches: list[list[Entry]]) -> Counters:
        counters = Counters()
        for batch in batches:
            counters.add(self._apply(batch, lane))
        return counters

    def _send(self, transact_items: list[dict[str, Any]], items: int) -> None:
        if not transact_items:
            return
        if self.pacer is not None and items and self.units_per_item:
            self.pacer.take(items * self.units_per_item)
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
        attempt = 0  # resends after a conflict or an unavailable DynamoDB (bounded)
        throttles = 0  # resends after a throttle (bounded by the budget, not counted as attempts)
        waited = 0.0
        while attempt < self.max_attempts:
            item_actions = [action for entry in live for action in entry.actions]
            transact_items = item_actions + self.accounting.actions(lane, [e.key for e in live], done, failed)
            try:
                self._send(transact_items, len(live))
                if self.pacer is not None:
                    self.pacer.succeeded()
                return Counters(applied=len(live), already_done=len(done), failed=len(failed))
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                why: str | None = None
                if code == "TransactionCanceledException":
                    why = self._settle(error, live, len(item_actions), done, failed)
                elif code == "ValidationException" and live:
                    if len(live) > 1:
                        return self._bisect(live, lane, done, failed)
                    message = f"{code}: {error.response.get('Error', {}).get('Message', '')}"
                    self.on_failed([live[0].failed(REASON_WRITE, message)], message)
                    failed.append(live[0].key)
                    live = []
                elif code in THROTTLE_ERRORS:
                    why = _THROTTLE
                elif code in TRANSIENT_ERRORS:
                    why = _CONFLICT
                else:
                    raise
                if why == _THROTTLE:
                    waited += self._wait_out_throttle(error, transact_items, throttles, waited)
                    throttles += 1
                    continue
                if why == _CONFLICT:
                    self._backoff(attempt)
                attempt += 1
            except BotocoreConnectionError:
                self._backoff(attempt)
                attempt += 1
        raise WorkRetriesSpent(
            f"a transaction of {len(live)} item(s) met a conflict or an unavailable DynamoDB {self.max_attempts} "
            "times; the message is redelivered and resumes from the stored cursor"
        )

    def _wait_out_throttle(
        self, error: ClientError, transact_items: list[dict[str, Any]], throttles: int, waited: float
    ) -> float:
        """Back off after a throttle (the pace slows too), or raise `BudgetSpent` when the wait
        would go past the budget. The seconds waited."""
        if self.pacer is not None:
            self.pacer.throttled()
        budget = self.budget if self.budget is not None else Budget(None, 0.0, self.clock)
        delay = throttle_backoff_seconds(throttles)
        if budget.left_s() < delay:
            spent = BudgetSpent("a transaction of the batch writer", error, waited_s=waited)
            spent.description = describe_throttle(error, throttled_tables({"TransactItems": transact_items}, error))
            raise spent from error
        self.clock.sleep(delay)
        return delay

    def _settle(
        self, error: ClientError, live: list[Entry], item_count: int, done: list[str], failed: list[str]
    ) -> str | None:
        """Read a cancelled transaction's reasons; update `live`, `done`, `failed` in place.
        Whether what is left should be resent after a throttle's or a conflict's backoff (None: at once)."""
        reasons = cancellation_reasons(error)
        if not reasons:
            raise error
        codes = cancellation_codes(error)
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
        throttled = any(code in THROTTLE_REASONS for code in codes)
        for entry, reason in newly_failed:
            # To the DLQ before the transaction that counts it: a crash in between sends it again
            # (replaying the copy changes nothing), never loses it.
            self.on_failed([entry.failed(REASON_WRITE, reason)], reason)
            failed.append(entry.key)
        live[:] = keep
        if not retry:
            return None
        return _THROTTLE if throttled else _CONFLICT

    def _bisect(self, batch: list[Entry], lane: int, done: list[str], failed: list[str]) -> Counters:
        """Refused whole, with no per-item reasons: halve until the item refused is alone."""
        middle = len(batch) // 2
        # What this batch already learnt is counted with the first half.
        counters = self._apply(batch[:middle], lane, done=done, failed=failed)
        counters.add(self._apply(batch[middle:], lane))
        return counters

    def _backoff(self, attempt: int) -> None:
        self.clock.sleep(conflict_backoff_seconds(attempt))
