"""The embedded server reached without a socket: botocore's requests to its endpoint handed to its
WSGI app on the sending thread.

Over HTTP each request costs a connection's worth of formatting and parsing on both sides and a
hop to a server thread, about a fifth of `make run`'s CPU (docs/development.md has the profile).
In process the same WSGI app (moto behind `SerializedDynamoDB`, so one DynamoDB request at a
time still) answers the same request bytes, with the same Host header (SQS queue URLs name the
endpoint), and botocore reads the answer as it reads one off the wire: status, headers, body, and
the CRC32 DynamoDB's answers carry. Everything above the HTTP session (botocore's retries,
`Endpoint._send` where faults are injected and requests counted) is unchanged. Requests to any
other endpoint go over the network as before, and the server keeps listening for other processes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.httpsession import URLLib3Session
from werkzeug.test import EnvironBuilder, run_wsgi_app

WsgiApp = Callable[..., Iterable[bytes]]

_lock = threading.Lock()
# endpoint ("http://127.0.0.1:PORT") -> the app that answers it
_apps: dict[str, WsgiApp] = {}
_stock_send = URLLib3Session.send


class ReadBody:
    """A body already read, in the shape botocore reads a response's `raw` (also the simulator's
    made-up answers: `clockless_tools.simulate.faults`)."""

    def __init__(self, content: bytes) -> None:
        self._content = content

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._content


def _endpoint_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    return bytes(body.read())  # a file-like body (botocore seeks it back itself on a retry)


def answer(app: WsgiApp, request: Any) -> AWSResponse:
    """`request` (botocore's prepared request) answered by `app`, as botocore reads an HTTP answer."""
    parts = urlsplit(request.url)
    headers = [
        (name, value.decode("utf-8") if isinstance(value, bytes) else str(value))
        for name, value in request.headers.items()
    ]
    environ = EnvironBuilder(
        path=parts.path or "/",
        base_url=f"{parts.scheme}://{parts.netloc}",
        query_string=parts.query,
        method=request.method,
        headers=headers,
        data=_body_bytes(request.body),
        multithread=True,
    ).get_environ()
    body, status, response_headers = run_wsgi_app(app, environ, buffered=True)
    try:
        content = b"".join(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    headers_read = HTTPHeaders()
    for name, value in response_headers.items():
        headers_read[name] = value
    return AWSResponse(request.url, int(status.split(" ", 1)[0]), headers_read, ReadBody(content))


def _send(session: URLLib3Session, request: Any) -> AWSResponse:
    app = _apps.get(_endpoint_of(request.url))
    if app is None:
        return _stock_send(session, request)
    return answer(app, request)


@contextlib.contextmanager
def served_in_process(endpoint: str, app: WsgiApp) -> Iterator[None]:
    """While active, this process's requests to `endpoint` are answered by `app` without a socket."""
    key = _endpoint_of(endpoint)
    with _lock:
        if key in _apps:
            raise RuntimeError(f"{key} is already served in process")
        _apps[key] = app
        setattr(URLLib3Session, "send", _send)  # noqa: B010 - the one call every botocore request passes
    try:
        yield
    finally:
        with _lock:
            del _apps[key]
            if not _apps:
                setattr(URLLib3Session, "send", _stock_send)  # noqa: B010
