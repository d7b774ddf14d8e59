"""Who may press the trigger: the shared secret's values, kept only as digests and compared in
constant time (the `secret-comparison` rule refuses any other comparison of a secret)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from clockless.errors import ClocklessError

SECRET_HEADER: Final = "x-clockless-secret"  # noqa: S105 - the header's name, not a secret
# Far above the generated secret's length: a longer header is refused before it is even hashed.
MAX_SECRET_LENGTH: Final = 256


class TriggerSecretError(ClocklessError, ValueError):
    """The stored secret is not what template.yaml generates. The message never contains a value."""


@dataclass(frozen=True, slots=True, repr=False)
class TriggerSecret:
    """The values a caller may present: `current`, and `previous` while a rotation is under way.

    Only their SHA-256 digests are kept, so equal-length values are compared and a stray repr or
    log line cannot carry the secret.
    """

    current_digest: bytes
    previous_digest: bytes | None

    @classmethod
    def from_value(cls, value: Any) -> TriggerSecret:
        """Parse the secret's JSON: {"current": "...", "previous": "..." or ""}."""
        if not isinstance(value, Mapping):
            raise TriggerSecretError('the trigger secret must be a JSON object {"current": ..., "previous": ...}')
        current = value.get("current")
        if not isinstance(current, str) or not _presentable(current):
            raise TriggerSecretError(
                f'the trigger secret\'s "current" must be a non-empty ASCII string of at most {MAX_SECRET_LENGTH} '
                "characters"
            )
        previous = value.get("previous") or None
        if previous is not None and (not isinstance(previous, str) or not _presentable(previous)):
            raise TriggerSecretError(
                f'the trigger secret\'s "previous" must be empty or an ASCII string of at most {MAX_SECRET_LENGTH} '
                "characters"
            )
        return cls(_digest(current), None if previous is None else _digest(previous))

    def accepts(self, presented_secret: str | None) -> bool:
        """True when the presented value is one of the values. Missing, empty, too long or non-ASCII: False."""
        if presented_secret is None or not _presentable(presented_secret):
            return False
        digest = _digest(presented_secret)
        matches_current = hmac.compare_digest(digest, self.current_digest)
        # Compared even when `current` matched: the time taken does not tell which value matched.
        matches_previous = self.previous_digest is not None and hmac.compare_digest(digest, self.previous_digest)
        return matches_current or matches_previous

    def __repr__(self) -> str:
        return f"TriggerSecret(previous={'set' if self.previous_digest else 'none'})"


def _presentable(value: str) -> bool:
    return 0 < len(value) <= MAX_SECRET_LENGTH and value.isascii()


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("ascii")).digest()


class SecretSource(Protocol):
    def load(self) -> TriggerSecret: ...
