"""The rows of the conformance table (clockless_tools.template.conformance says how they are used).

Quotes are AWS's words, from the page each case names. Expected ticks are UTC and were worked out
by hand: weekdays from the calendar, offsets from the zone's rules (New York -5/-4, Adelaide
+9:30/+10:30, Lord Howe +10:30/+11, Auckland +12/+13, London 0/+1, Kolkata +5:30).
"""

from __future__ import annotations

from typing import Final

from clockless_tools.template import conformance_examples, conformance_time, conformance_wildcards
from clockless_tools.template.conformance import Case

CASES: Final[tuple[Case, ...]] = (
    *conformance_examples.CASES,
    *conformance_wildcards.CASES,
    *conformance_time.CASES,
)
