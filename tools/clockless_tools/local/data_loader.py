"""One botocore data loader for every session a long-running tool process makes.

Each botocore session loads the service models and `endpoints.json` it needs from disk the first
time it is asked, and keeps them in its own data loader. Lambda makes its sessions once per
execution environment; the test process and the simulator's replays host many functions' worth
of them (the kit's idempotency store, Powertools' secrets provider and PynamoDB each make a session of
their own, again whenever a function's environment differs), and parsing those JSON files again
was about an eighth of the test process's CPU and of a replay's. So every session of such a process
gets the same loader: what one session of a long-running process does for all its clients (the
loaded data is read, never written). `tests/conftest.py` installs it in the test process,
`clockless_tools.simulate.replay` in each replay; the CLI and the local server load their own.
"""

from __future__ import annotations

import functools
from typing import Any

from botocore import loaders
from botocore.session import Session

_shared_loader = functools.cache(loaders.create_loader)


def _register_data_loader(self: Session) -> None:
    self._components.lazy_register_component(  # type: ignore[attr-defined]
        "data_loader", lambda: _shared_loader(self.get_config_variable("data_path"))
    )


def share_data_loader() -> None:
    """Every botocore session made from now on uses one data loader per data path."""
    if not callable(getattr(Session, "_register_data_loader", None)):
        raise RuntimeError(
            "botocore.session.Session._register_data_loader is gone: clockless_tools.local.data_loader shares "
            "the data loader through it (see test_upgrade_canaries.py)"
        )
    setattr(Session, "_register_data_loader", _register_data_loader)  # noqa: B010 - botocore's stubs omit it


def data_loader(session: Any) -> Any:
    return session.get_component("data_loader")
