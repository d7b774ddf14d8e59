"""What a global secondary index that lags its table shows: the fault kinds `stale_rows` and
`not_yet_visible` of the fault injector (clockless_tools.simulate.faults).

A GSI is read eventually consistent only, so a page read again can still show rows whose base
items have left the index since (stale), or lack a row written a moment ago (not yet visible).
`LaggingIndex` remembers what each page of an index has shown, and rewrites a page's answer the
way such an index would."""

from __future__ import annotations

import json
import threading
from typing import Any, Final

from botocore.awsrequest import AWSResponse

from clockless_tools.simulate.responses import made_up_response, operation_of, payload_of

# What names one page of one index query: its table, index, key condition (with values) and
# start key.
PAGE_FIELDS: Final = (
    "TableName",
    "IndexName",
    "KeyConditionExpression",
    "FilterExpression",
    "ExpressionAttributeNames",
    "ExpressionAttributeValues",
    "ExclusiveStartKey",
    "ScanIndexForward",
)


def index_read(request: Any) -> str | None:
    """The index a DynamoDB Query reads (None: not an index Query)."""
    if operation_of(request) != "Query":
        return None
    index = payload_of(request).get("IndexName")
    return index if isinstance(index, str) else None


def page_of(request: Any) -> str:
    """One page of one index query, as a key (`PAGE_FIELDS`, with their values)."""
    payload = payload_of(request)
    return json.dumps({name: payload.get(name) for name in PAGE_FIELDS}, sort_keys=True)


def answer_of(response: AWSResponse) -> dict[str, Any] | None:
    """A successful response's JSON body (None: an error, or a body that is not an object)."""
    if response.status_code != 200:
        return None
    try:
        answer = json.loads(response.content or b"{}")
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


class LaggingIndex:
    """The pages every index has shown, and the rows `not_yet_visible` kept out of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pages_shown: dict[str, list[dict[str, Any]]] = {}
        # The rows kept out of pages, in the order they were.
        self.hidden_rows: list[dict[str, Any]] = []

    def remember(self, request: Any, response: AWSResponse) -> None:
        """The rows this page of the index shows now, remembered beside what it showed before."""
        answer = answer_of(response)
        if answer is None:
            return
        rows = list(answer.get("Items") or [])
        with self._lock:
            shown = self._pages_shown.setdefault(page_of(request), [])
            shown.extend(row for row in rows if row not in shown)

    def stale_page(self, request: Any, response: AWSResponse) -> tuple[AWSResponse, int]:
        """The page with the rows it showed before and no longer does, where they sorted (besides
        the page's Limit, as a lagging index would count them); and how many those are."""
        answer = answer_of(response)
        if answer is None:
            return response, 0  # an error: nothing to lag
        rows = list(answer.get("Items") or [])
        with self._lock:
            stale = [row for row in self._pages_shown.get(page_of(request), []) if row not in rows]
        return _answered(request, response, answer, stale + rows), len(stale)

    def page_missing_a_row(self, request: Any, response: AWSResponse) -> AWSResponse:
        """The page without its first row (kept in `hidden_rows`)."""
        answer = answer_of(response)
        if answer is None:
            return response  # an error: nothing to lag
        rows = list(answer.get("Items") or [])
        if rows:
            with self._lock:
                self.hidden_rows.append(rows.pop(0))
        return _answered(request, response, answer, rows)


def _answered(request: Any, response: AWSResponse, answer: dict[str, Any], rows: list[dict[str, Any]]) -> AWSResponse:
    answer["Items"] = rows
    answer["Count"] = answer["ScannedCount"] = len(rows)
    # Another body: its length and DynamoDB's CRC32 of it (which botocore checks) go with it.
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("x-amz-crc32", "content-length")}
    return made_up_response(request, 200, json.dumps(answer).encode(), headers)
