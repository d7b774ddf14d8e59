"""Requests per delivery, by operation: the one table of them (`clockless bench requests`,
docs/tick-flow.md#requests-per-delivery) and what the integration tests count on the embedded
server against it (`tests/integration/test_fanout_requests.py`, `test_window_generation.py`,
`test_session_cleanup.py`, `test_duplicate_delivery.py`, `test_kit_idempotency.py`).

A count here is a formula of what the delivery meets (partitions, pages, items per page), never a
figure typed into a page: the tests assert that the requests botocore sends equal these, so a
change to the kit's requests fails them until this module says the new count, and `make docs`
then rewrites every page's table from it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from clockless.dynamo import partition_keys
from clockless.fanout.writer import MAX_ITEM_ACTIONS
from clockless_tools.template.model import Template

TRANSACT: Final = "TransactWriteItems"
QUERY: Final = "Query"
UPDATE: Final = "UpdateItem"
GET: Final = "GetItem"
VISIBILITY: Final = "ChangeMessageVisibility"
SEND_BATCH: Final = "SendMessageBatch"
# SendMessageBatch takes at most 10 messages (the SQS API reference).
MESSAGES_PER_BATCH: Final = 10

Operations = dict[str, int]


def _ops(counts: Counter[str]) -> Operations:
    return {operation: n for operation, n in counts.items() if n}


def first_delivery() -> Operations:
    """The kit's share of a first delivery: the claim with the ledger's `started`, the completion
    with its `succeeded` (one transaction each)."""
    return {TRANSACT: 2}


def duplicate_delivery() -> Operations:
    """A delivery of a completed tick: its claim's transaction, cancelled by its condition, returns the
    completed record."""
    return {TRANSACT: 1}


def failed_attempt() -> Operations:
    """An attempt whose logic raises: its claim, then the release (the ledger's `failed` and the
    claim deleted, one transaction)."""
    return {TRANSACT: 2}


def last_success_read() -> Operations:
    """What a job's logic adds by reading `run.last_success`: the ledger's Query."""
    return {QUERY: 1}


def local_tick_watch() -> Operations:
    """What a job with a local time (LocalTime) adds to every delivery, a tick's, a duplicate's or one
    dropped as `not_a_tick`: the ledger's Query of its latest successes, each zone's local tick
    judged on them (clockless.local_ticks)."""
    return {QUERY: 1}


def items_per_transaction(actions_per_item: int) -> int:
    """Items a batch transaction holds: its item actions, whole items only, beside the lane's counter."""
    return MAX_ITEM_ACTIONS // actions_per_item


def coordinator(partitions: int, *, reads_last_success: bool = False) -> Operations:
    """A fanned-out job's scheduled function: the kit's two transactions and its partition messages,
    whatever the number of items."""
    counts = Counter({TRANSACT: 2, SEND_BATCH: -(-partitions // MESSAGES_PER_BATCH)})
    if reads_last_success:
        counts.update(last_success_read())
    return _ops(counts)


def partition_run(
    pages: Sequence[int],
    actions_per_item: int,
    *,
    finishes_tick: bool = False,
    outside_queries: int = 0,
    queries: int | None = None,
) -> Operations:
    """One worker run over one partition whose pages hold `pages` items each (the last page short
    or empty): the message's visibility bound to the attempt, the lease with the ledger's check,
    the pages' Queries (`queries`; None: one a page, a partition of one index key), a transaction
    per `items_per_transaction` items of a page, a cursor after each page but the last, the
    Queries of the keys outside its index's range (`outside_queries`: clockless.fanout.ReadsOutside,
    none found), done with the tick's `partitions_done`, the finisher's look at the tick; the run
    that finishes the tick adds the counters' Query, the settling update and the note that
    `TickSucceeded` is out."""
    per = items_per_transaction(actions_per_item)
    counts = Counter(
        {
            VISIBILITY: 1,
            TRANSACT: 1 + sum(-(-items // per) for items in pages) + 1,
            QUERY: (len(pages) if queries is None else queries) + outside_queries,
            UPDATE: len(pages) - 1,
            GET: 1,
        }
    )
    if finishes_tick:
        counts.update({QUERY: 1, UPDATE: 2})
    return _ops(counts)


def key_pages(items_by_key: Sequence[int], page_size: int) -> tuple[list[int], int]:
    """The pages a partition reads over its index keys holding `items_by_key` items each, and their
    Queries (`clockless.dynamo.keys_page`): a key that ends short hands the rest of the page to the
    next; a Query that fills the page ends it with a cursor in its key (DynamoDB returns a
    `LastEvaluatedKey` at the limit), so the next page queries that key again."""
    if page_size < 1 or not items_by_key or any(items < 0 for items in items_by_key):
        raise ValueError(f"a partition reads one key or more, pages of one item or more: {items_by_key}, {page_size}")
    pages: list[int] = []
    queries = rows = 0
    for items in items_by_key:
        left = items
        while True:
            queries += 1
            taken = min(left, page_size - rows)
            rows, left = rows + taken, left - taken
            if rows < page_size:
                break  # the key ended short: the page goes on in the next key
            pages.append(rows)
            rows = 0
    pages.append(rows)
    return pages, queries


def items_by_key(item_keys: Iterable[str], partitions: int, keys: int) -> list[list[int]]:
    """Each partition's items by index key, in the order it reads its keys, from the index key of
    every due item (`tick_workers`' first argument)."""
    found = Counter(item_keys)
    return [[found[key] for key in partition_keys(partition, partitions, keys)] for partition in range(partitions)]


def tick_workers(
    items_by_partition: Sequence[Sequence[int]],
    actions_per_item: int,
    page_size: int,
    *,
    outside_queries: int = 0,
) -> Operations:
    """Every partition run of one clean tick, each partition's items by index key (in the order
    it reads its keys), read `page_size` to a page; `outside_queries` per key; the last partition
    finishes the tick."""
    total: Counter[str] = Counter()
    for number, items_by_key in enumerate(items_by_partition):
        pages, queries = key_pages(items_by_key, page_size)
        last = number == len(items_by_partition) - 1
        total.update(
            partition_run(
                pages,
                actions_per_item,
                finishes_tick=last,
                outside_queries=outside_queries * len(items_by_key),
                queries=queries,
            )
        )
    return _ops(total)


def duplicate_partition_message() -> Operations:
    """A partition message delivered again after its run was done: the visibility bound, the lease's
    transaction refused (its record says done), the finisher's look at the tick."""
    return {VISIBILITY: 1, TRANSACT: 1, GET: 1}


def unbacked_message() -> Operations:
    """A partition message for a tick no coordinator claimed: the lease's transaction refused by the
    ledger's check, nothing written, and the message shown again after the backoff."""
    return {TRANSACT: 1, VISIBILITY: 2}


@dataclass(frozen=True, slots=True)
class Row:
    delivery: str
    operations: Operations
    note: str = ""


def describe(operations: Operations) -> str:
    total = sum(operations.values())
    parts = ", ".join(f"{n} `{operation}`" for operation, n in sorted(operations.items()))
    return f"{total}: {parts}"


def fanned_out_jobs(template: Template) -> Iterable[tuple[str, int]]:
    """(job, partitions) of each fanned-out job the template declares, its partitions read as its
    worker's MaximumConcurrency (rule shards-match-concurrency holds the two equal)."""
    for job in sorted(template.jobs):
        function = template.function_for_job(job)
        for worker in template.workers_of(function.logical_id):
            for mapping in template.mappings_of(worker):
                if mapping.maximum_concurrency is not None:
                    yield job, mapping.maximum_concurrency


def rows(template: Template) -> list[Row]:
    kit = [
        Row("first delivery, the kit's share", first_delivery()),
        Row("duplicate of a completed tick", duplicate_delivery()),
        Row("an attempt that fails, the kit's share (claim, then release)", failed_attempt()),
        Row("a job's logic reading `run.last_success`", last_success_read(), "added to its first delivery"),
        Row(
            "a job with a `LocalTime`, every delivery",
            local_tick_watch(),
            "added to each of the above; a delivery dropped as `not_a_tick` sends it alone",
        ),
    ]
    jobs = [
        Row(
            f"{job}'s coordinator, first delivery ({partitions} partitions)",
            coordinator(partitions),
            "whatever the number of items; + 1 `Query` if its logic reads `run.last_success`",
        )
        for job, partitions in fanned_out_jobs(template)
    ]
    per = items_per_transaction(1), items_per_transaction(2)
    workers = [
        Row(
            "a partition run, one page",
            partition_run([0], 1),
            f"+ 1 `TransactWriteItems` per {per[0]} items of a page at 1 action an item, {per[1]} at 2",
        ),
        Row(
            "each further index key of a partition run",
            {QUERY: 1},
            "its Query, in the page the key before it left short (`clockless.dynamo.keys_page`); "
            "one more when a page fills in it",
        ),
        Row(
            "a partition run's look at the keys outside its index's range",
            {QUERY: 1},
            "per index key, per side of the key range its due read leaves open (`ReadsOutside`): one "
            "after a `<=` read, two after a `BETWEEN`; rows found there fail by name",
        ),
        Row("each further page of a partition run", {QUERY: 1, UPDATE: 1}, "its Query, the cursor before it"),
        Row(
            "the partition run that finishes the tick, added",
            {QUERY: 1, UPDATE: 2},
            "the counters' Query, the settling update, the note that `TickSucceeded` is out",
        ),
        Row("a duplicate partition message (its run was done)", duplicate_partition_message()),
        Row("a partition message for a tick nobody claimed", unbacked_message(), "writes nothing"),
    ]
    return kit + jobs + workers


def markdown(template: Template) -> str:
    lines = ["| delivery | requests | |", "| --- | --- | --- |"]
    lines += [f"| {row.delivery} | {describe(row.operations)} | {row.note} |" for row in rows(template)]
    return "\n".join(lines)
