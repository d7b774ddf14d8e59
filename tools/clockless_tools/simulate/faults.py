"""Failures injected where production meets them: in a function's own DynamoDB traffic.

The injector sits on botocore's single send path (boto3 and PynamoDB both use it), inside the
SDK's retry loop, so a fault is seen by the code exactly as botocore would hand it over. A thread
(one delivery) is armed to meet one fault at its n-th request (an API call: botocore's retries
of a call are the same request). The kinds are the fault model every write path is judged
against (docs/tick-contract.md):

- `refused`: the request never reaches DynamoDB (connection refused on every SDK attempt);
- `lost_response`: DynamoDB applies it, the answer is lost, botocore resends the same bytes;
- `throttled`: DynamoDB throttles every attempt until botocore's retries are spent;
- `lost_then_throttled`: applied, answer lost, and every resend throttled: the caller sees an
  error for a write that took effect;
- `transaction_throttled`: throttled as DynamoDB throttles a transaction: a `TransactWriteItems`
  cancelled with `ThrottlingError` on its first action (botocore does not retry that), any other
  request as `throttled`;
- `dies_after`: answered, and then the attempt dies (Lambda's timeout): nothing after it runs;
- `error_after`: answered, and then the delivery raises (the simulator's partial run);
- `stale_rows` (a Query of a global secondary index, which is eventually consistent): the page
  also shows the rows an earlier read of the same page got that have left the index since (their
  base items were applied or changed: a lagging index still shows them);
- `not_yet_visible` (a Query of an index): the page lacks its first row, written a moment ago and
  not yet in the index; `hidden_rows` keeps what each such page lacked.

It also answers a resent `TransactWriteItems` as DynamoDB does: a request carrying the
`ClientRequestToken` of one that succeeded less than 10 minutes ago gets that request's answer
and changes nothing (moto does not do this). botocore's sleeps between retries take no time.
Nothing in the functions or the kit knows about any of this.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import botocore.endpoint
from botocore.awsrequest import AWSResponse
from botocore.endpoint import Endpoint
from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

from clockless_tools.simulate.index_lag import LaggingIndex, index_read
from clockless_tools.simulate.responses import (
    error_response,
    made_up_response,
    operation_of,
    payload_of,
    throttle_error_response,
    throttled_response,
)

# Requests that change something: DynamoDB writes, and work sent to a queue (a fanned-out tick's
# coordinator writes no domain table; the partition messages it sends are its effect).
WRITE_OPERATIONS: Final = frozenset(
    {
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "ExecuteTransaction",
        "SendMessage",
        "SendMessageBatch",
    }
)
# DynamoDB keeps a transaction's ClientRequestToken this long after the request completed.
CLIENT_REQUEST_TOKEN_SECONDS: Final = 600


class FaultKind(enum.StrEnum):
    REFUSED = "refused"
    LOST_RESPONSE = "lost_response"
    THROTTLED = "throttled"
    LOST_THEN_THROTTLED = "lost_then_throttled"
    TRANSACTION_THROTTLED = "transaction_throttled"
    DIES_AFTER = "dies_after"
    ERROR_AFTER = "error_after"
    STALE_ROWS = "stale_rows"
    NOT_YET_VISIBLE = "not_yet_visible"


# The fault model's kinds, as the contract lists them (plus the lost answer whose resends are
# throttled: how a caller sees an error for a write DynamoDB applied).
MODEL_KINDS: Final = (
    FaultKind.REFUSED,
    FaultKind.LOST_RESPONSE,
    FaultKind.THROTTLED,
    FaultKind.LOST_THEN_THROTTLED,
    FaultKind.DIES_AFTER,
)
# An index's reads lag its table (GSI reads are eventually consistent only): what a Query of an
# index can answer. Aimed at any other request, they change nothing and do not fire.
INDEX_LAG_KINDS: Final = (FaultKind.STALE_ROWS, FaultKind.NOT_YET_VISIBLE)
# The request took effect in DynamoDB although its sender may not know it.
APPLIED_KINDS: Final = frozenset(
    {FaultKind.LOST_RESPONSE, FaultKind.LOST_THEN_THROTTLED, FaultKind.DIES_AFTER, FaultKind.ERROR_AFTER}
)


class InjectedFault(RuntimeError):
    """Raised by the injector inside a delivery (`error_after`); never by the code under test."""

    def __init__(self, message: str, *, writes_done: int) -> None:
        super().__init__(message)
        # Domain writes that had taken effect when the fault fired (the answered request included).
        self.writes_done = writes_done


class AttemptDied(BaseException):
    """The Lambda attempt was killed right after a request (its timeout). A BaseException, so no
    `except Exception` in the code under test can run anything after it, as in Lambda."""


def tables_in_request(request: Any) -> set[str]:
    """The DynamoDB tables a request names (single-table, transaction and batch operations)."""
    payload = payload_of(request)
    tables = {payload["TableName"]} if isinstance(payload.get("TableName"), str) else set()
    for item in payload.get("TransactItems") or []:
        for operation in item.values():
            if isinstance(operation, dict) and isinstance(operation.get("TableName"), str):
                tables.add(operation["TableName"])
    tables.update(key for key in (payload.get("RequestItems") or {}) if isinstance(key, str))
    return tables


def _header(request: Any, name: str) -> str | None:
    value = request.headers.get(name)
    return value.decode() if isinstance(value, bytes) else value


@dataclass
class _Applied:
    at: float
    body: dict[str, Any]
    status: int
    headers: dict[str, str]
    content: bytes


@dataclass
class RequestRecord:
    """One request (API call) a delivery sent while armed: what it was and what was injected."""

    index: int
    operation: str
    tables: frozenset[str]
    fault: FaultKind | None = None
    # the global secondary index a Query reads (None: not an index read)
    index_name: str | None = None


@dataclass
class _Armed:
    # request index (1-based) -> the fault it meets
    plan: dict[int, FaultKind]
    count_spared: bool
    # indexes among all requests (bookkeeping included) whose answer is lost and resent
    lost_answers: frozenset[int] = frozenset()
    seen: int = 0
    seen_all: int = 0
    writes: int = 0
    fired: bool = False
    # the faulted request being sent (botocore's attempts of one call share its invocation id)
    faulted_call: str | None = None
    kind: FaultKind = FaultKind.ERROR_AFTER
    sends_of_fault: int = 0
    dead: bool = False
    requests: list[RequestRecord] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)
    # index Query (1-based, among this delivery's index reads) -> the lag it meets
    index_plan: dict[int, FaultKind] = field(default_factory=dict)
    index_reads: int = 0


@dataclass
class FaultCounts:
    """Totals over every thread since the injector was made."""

    # resent transactions answered from their ClientRequestToken, as DynamoDB answers them
    answered_from_token: int = 0
    # rows a lagging index showed although their base items had left it (`stale_rows`)
    stale_rows_shown: int = 0


class FaultInjector:
    """Arm a thread's next delivery to meet one fault; install once around everything that sends."""

    def __init__(self, spared_tables: Collection[str] = (), *, client_request_tokens: bool = True) -> None:
        # Requests to these tables (the kit's bookkeeping) are not counted unless an arm says so.
        self.spared_tables = frozenset(spared_tables)
        # False: resent transactions reach moto as new requests, as if DynamoDB had not recognised
        # them (how a caller must cope without the token, e.g. past its 10 minutes).
        self.client_request_tokens = client_request_tokens
        self.counts = FaultCounts()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._transactions: dict[str, _Applied] = {}
        # Armed for every thread at once: a delivery whose code sends from threads of its own
        # (the kit's batch writer), run while nothing else sends.
        self._everywhere: _Armed | None = None
        self._sending = threading.Lock()
        # What each page of an index has shown (`stale_rows`), and what `not_yet_visible` kept out.
        self.index = LaggingIndex()

    def _armed(self) -> _Armed | None:
        armed: _Armed | None = getattr(self._local, "armed", None)
        return armed if armed is not None else self._everywhere

    def arm(
        self,
        after_requests: int | None,
        kind: FaultKind = FaultKind.ERROR_AFTER,
        *,
        count_spared: bool = False,
        then: Mapping[int, FaultKind] | None = None,
        lost_answers: Collection[int] = (),
        every_thread: bool = False,
        index_reads: Mapping[int, FaultKind] | None = None,
    ) -> None:
        """The fault hits this thread's `after_requests`-th request from now (1 = the next one;
        bookkeeping requests count only with `count_spared`); `then` adds faults at later
        requests of the same delivery. `lost_answers` are indexes among all its requests whose
        answer is lost (and resent by botocore). `every_thread`: the requests of every thread
        count, in the order they are sent (for code that sends from threads it starts; only
        while nothing else sends). `index_reads` aims index lags at this delivery's n-th Query of an
        index (1 = its first), wherever among its requests that falls."""
        plan = {} if after_requests is None else {after_requests: FaultKind(kind)}
        plan.update({index: FaultKind(k) for index, k in (then or {}).items()})
        if min([*plan, *lost_answers], default=1) < 1:
            raise ValueError("a fault fires at the first request at the earliest")
        armed = _Armed(plan, count_spared, frozenset(lost_answers))
        armed.index_plan = {index: FaultKind(k) for index, k in (index_reads or {}).items()}
        self._local.armed = armed
        if every_thread:
            self._everywhere = armed

    def watch(self) -> None:
        """Record this thread's requests without injecting anything (a clean run to compare with)."""
        self._local.armed = _Armed({}, count_spared=True)

    def disarm(self) -> bool:
        """Stop on this thread (and everywhere, when armed for every thread); True if the armed fault fired."""
        armed: _Armed | None = getattr(self._local, "armed", None)
        self._local.armed = None
        if armed is not None and armed is self._everywhere:
            self._everywhere = None
        return bool(armed and armed.fired)

    def requests(self) -> list[RequestRecord]:
        """The requests this thread sent since it was last armed (or watched)."""
        armed = self._armed()
        return list(armed.requests) if armed else []

    # ------------------------------------------------------------------------------ send path
    def _send(self, original: Any, endpoint: Endpoint, request: Any) -> AWSResponse:
        mine: _Armed | None = getattr(self._local, "armed", None)
        armed = mine if mine is not None else self._everywhere
        if armed is None:
            return self._forward(original, endpoint, request)
        if armed is self._everywhere:
            # A delivery armed for every thread (its own and those it starts): one request's
            # bookkeeping at a time.
            with self._sending:
                decided = self._decide(armed, request)
        else:
            decided = self._decide(armed, request)
        return decided(original, endpoint, request)

    def _decide(self, armed: _Armed, request: Any) -> Callable[[Any, Endpoint, Any], AWSResponse]:
        """What becomes of this request: forwarded, or met by the armed fault."""
        if armed.dead:
            raise AttemptDied("the attempt is dead; nothing it would still send is sent")
        call = _header(request, "amz-sdk-invocation-id") or str(id(request))
        if call == armed.faulted_call:
            return functools.partial(self._resend_after, armed=armed, domain=False)
        if call in armed.calls:
            return self._forward  # botocore's retry of a request met before
        armed.calls.add(call)
        tables = tables_in_request(request)
        domain = not (tables and tables <= self.spared_tables)
        counted = armed.count_spared or domain
        armed.seen_all += 1
        armed.seen += counted
        index_name = index_read(request)
        armed.requests.append(
            RequestRecord(armed.seen_all, operation_of(request), frozenset(tables), index_name=index_name)
        )
        kind = armed.plan.get(armed.seen) if counted else None
        if kind in INDEX_LAG_KINDS and index_name is None:
            kind = None  # only an index read lags
        if index_name is not None:
            armed.index_reads += 1
            kind = kind or armed.index_plan.get(armed.index_reads)
        if kind is None and armed.seen_all in armed.lost_answers:
            kind = FaultKind.LOST_RESPONSE
        if kind is not None:
            armed.fired = True
            armed.faulted_call, armed.kind, armed.sends_of_fault = call, kind, 0
            armed.requests[-1].fault = kind
            return functools.partial(self._resend_after, armed=armed, domain=domain)
        return functools.partial(self._forward_counted, armed=armed, domain=domain)

    def _forward_counted(
        self, original: Any, endpoint: Endpoint, request: Any, *, armed: _Armed, domain: bool
    ) -> AWSResponse:
        response = self._forward(original, endpoint, request)
        if domain and operation_of(request) in WRITE_OPERATIONS:
            armed.writes += 1
        if index_read(request) is not None:
            self.index.remember(request, response)
        return response

    def _resend_after(
        self, original: Any, endpoint: Endpoint, request: Any, *, armed: _Armed, domain: bool
    ) -> AWSResponse:
        return self._resend_of_fault(original, endpoint, request, armed, domain=domain)

    def lost_answers(self) -> int:
        """How many answers this thread's armed delivery lost (and had resent)."""
        return sum(1 for r in self.requests() if r.fault in (FaultKind.LOST_RESPONSE, FaultKind.LOST_THEN_THROTTLED))

    def _resend_of_fault(
        self, original: Any, endpoint: Endpoint, request: Any, armed: _Armed, *, domain: bool
    ) -> AWSResponse:
        """Every SDK attempt of the faulted request comes here; `sends_of_fault` says which one."""
        armed.sends_of_fault += 1
        first = armed.sends_of_fault == 1
        kind = armed.kind
        if kind is FaultKind.REFUSED:
            raise EndpointConnectionError(endpoint_url=request.url)
        if kind is FaultKind.THROTTLED or (kind is FaultKind.LOST_THEN_THROTTLED and not first):
            return throttle_error_response(request)
        if kind is FaultKind.TRANSACTION_THROTTLED:
            return throttled_response(request)
        if kind in INDEX_LAG_KINDS:
            return self._lagging_page(original, endpoint, request, kind)
        response = self._forward(original, endpoint, request)
        if not first:
            return response  # the SDK's resend after a lost answer, answered as DynamoDB would
        if domain and operation_of(request) in WRITE_OPERATIONS:
            armed.writes += 1  # a domain write that took effect, whatever its sender hears
        if kind in (FaultKind.LOST_RESPONSE, FaultKind.LOST_THEN_THROTTLED):
            raise ConnectionClosedError(endpoint_url=request.url)
        if kind is FaultKind.DIES_AFTER:
            armed.dead = True
            raise AttemptDied(f"the attempt died right after request {armed.seen} ({operation_of(request)})")
        raise InjectedFault(
            f"injected failure after a response from {', '.join(sorted(tables_in_request(request))) or 'DynamoDB'} "
            f"({armed.writes} domain write(s) already done)",
            writes_done=armed.writes,
        )

    def _lagging_page(self, original: Any, endpoint: Endpoint, request: Any, kind: FaultKind) -> AWSResponse:
        """The page as an index that lags its table answers it (every SDK attempt of the read)."""
        response = self._forward(original, endpoint, request)
        if kind is not FaultKind.STALE_ROWS:
            return self.index.page_missing_a_row(request, response)
        page, stale = self.index.stale_page(request, response)
        with self._lock:
            self.counts.stale_rows_shown += stale
        return page

    @property
    def hidden_rows(self) -> list[dict[str, Any]]:
        """The rows `not_yet_visible` kept out of pages, in the order it did."""
        return self.index.hidden_rows

    def _forward(self, original: Any, endpoint: Endpoint, request: Any) -> AWSResponse:
        if not self.client_request_tokens or operation_of(request) != "TransactWriteItems":
            return original(endpoint, request)  # type: ignore[no-any-return]
        body = payload_of(request)
        token = body.get("ClientRequestToken")
        if not isinstance(token, str):
            return original(endpoint, request)  # type: ignore[no-any-return]
        now = time.time()
        with self._lock:
            applied = self._transactions.get(token)
            if applied is not None and now - applied.at >= CLIENT_REQUEST_TOKEN_SECONDS:
                applied = None
            if applied is not None:
                if applied.body != body:
                    return error_response(
                        request,
                        "IdempotentParameterMismatchException",
                        "ClientRequestToken reused with other parameters",
                    )
                self.counts.answered_from_token += 1
                return made_up_response(request, applied.status, applied.content, applied.headers)
        response: AWSResponse = original(endpoint, request)
        if response.status_code == 200:
            with self._lock:
                self._transactions[token] = _Applied(now, body, 200, dict(response.headers), response.content)
        return response

    @contextlib.contextmanager
    def installed(self) -> Iterator[FaultInjector]:
        original = getattr(Endpoint, "_send")  # noqa: B009 - private on purpose: the one place every request passes

        def send(endpoint: Endpoint, request: Any) -> AWSResponse:
            return self._send(original, endpoint, request)

        setattr(Endpoint, "_send", send)  # noqa: B010
        with _instant_sdk_retries():
            try:
                yield self
            finally:
                setattr(Endpoint, "_send", original)  # noqa: B010


class _NoSleepTime:
    """`time` as botocore's endpoint sees it, without the sleep between retries (up to 25 s
    for ten throttled attempts): the retry still happens, the wait is not worth a test's time."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(_seconds: float) -> None:
        return None


@contextlib.contextmanager
def _instant_sdk_retries() -> Iterator[None]:
    saved = getattr(botocore.endpoint, "time")  # noqa: B009 - the module botocore sleeps through
    setattr(botocore.endpoint, "time", _NoSleepTime())  # noqa: B010
    try:
        yield
    finally:
        setattr(botocore.endpoint, "time", saved)  # noqa: B010
