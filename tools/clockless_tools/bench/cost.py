"""What a night costs at on-demand prices, per million items, fanned out against the sequential
loop: DynamoDB write and read request units, Lambda GB-seconds and requests, SQS requests.

Prices: us-east-1, read on 2026-12-01 from AWS's pricing pages (they move; the date says when):

- DynamoDB on-demand: $0.625 per million write request units (https://aws.amazon.com/dynamodb/pricing/on-demand/,
  after the November 2024 on-demand price reduction), and $0.125 per million read request units
  (the same page);
- Lambda, arm64 (the template's `Architectures`): $0.0000133334 per GB-second, $0.20 per million
  requests (https://aws.amazon.com/lambda/pricing/), before the free tier;
- SQS standard queue: $0.40 per million requests, each 64 KB of a message one request
  (https://aws.amazon.com/sqs/pricing/), before the free tier.

A fanned-out night pays its workers for the whole night (each runs until its partition is done,
throttled waits included): workers x time x memory. Each run is one request; a run hands on after
`Timeout - WORK_TIME_BUDGET_SECONDS`, so a partition of t seconds takes ceil(t / that) runs, each
costing the SQS requests of one partition message (send, receive, delete). The loop is one
function doing every item in turn: its GB-seconds are its measured time per item x memory (it
would need many invocations past Lambda's 15-minute limit; those requests are counted too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

PRICES_READ_ON: Final = "2026-12-01"
WRU_PER_MILLION: Final = 0.625
RRU_PER_MILLION: Final = 0.125
LAMBDA_GB_SECOND: Final = 0.0000133334
LAMBDA_PER_MILLION_REQUESTS: Final = 0.20
SQS_PER_MILLION_REQUESTS: Final = 0.40
LAMBDA_MAX_SECONDS: Final = 900
SQS_REQUESTS_PER_RUN: Final = 3  # the partition (or continuation) message sent, received, deleted


@dataclass(frozen=True, slots=True)
class NightCost:
    """Dollars per night, by what is paid for."""

    write_units: float
    lambda_compute: float
    lambda_requests: float
    sqs_requests: float
    read_units: float = 0.0

    @property
    def total(self) -> float:
        return self.write_units + self.read_units + self.lambda_compute + self.lambda_requests + self.sqs_requests

    def as_dict(self) -> dict[str, float]:
        return {
            "write_units": round(self.write_units, 4),
            "read_units": round(self.read_units, 4),
            "lambda_compute": round(self.lambda_compute, 4),
            "lambda_requests": round(self.lambda_requests, 4),
            "sqs_requests": round(self.sqs_requests, 4),
            "total": round(self.total, 4),
        }


def fanned_out_cost(
    items: int,
    wcu_per_item: float,
    *,
    seconds: float,
    workers: int,
    memory_mb: int,
    run_seconds: float,
    rcu_per_item: float = 0.0,
) -> NightCost:
    runs = workers * max(1, math.ceil(seconds / run_seconds)) + 1  # + the coordinator
    return NightCost(
        write_units=items * wcu_per_item / 1e6 * WRU_PER_MILLION,
        lambda_compute=workers * seconds * memory_mb / 1024 * LAMBDA_GB_SECOND,
        lambda_requests=runs / 1e6 * LAMBDA_PER_MILLION_REQUESTS,
        sqs_requests=(runs - 1) * SQS_REQUESTS_PER_RUN / 1e6 * SQS_PER_MILLION_REQUESTS,
        read_units=items * rcu_per_item / 1e6 * RRU_PER_MILLION,
    )


def loop_cost(
    items: int, wcu_per_item: float, *, seconds_per_item: float, memory_mb: int, rcu_per_item: float = 0.0
) -> NightCost:
    seconds = items * seconds_per_item
    return NightCost(
        write_units=items * wcu_per_item / 1e6 * WRU_PER_MILLION,
        lambda_compute=seconds * memory_mb / 1024 * LAMBDA_GB_SECOND,
        lambda_requests=math.ceil(seconds / LAMBDA_MAX_SECONDS) / 1e6 * LAMBDA_PER_MILLION_REQUESTS,
        sqs_requests=0.0,
        read_units=items * rcu_per_item / 1e6 * RRU_PER_MILLION,
    )
