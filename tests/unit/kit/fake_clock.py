"""A clock that moves only when the code under test waits: no test sleeps for real."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeClock:
    at: float = 1_000.0
    slept: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.at += max(0.0, seconds)

    @property
    def waited(self) -> float:
        return sum(self.slept)
