"""Rule `partial-batch-failures`: an SQS event source mapping returns only the messages that failed,
in small batches, with a bounded number of concurrent workers.

Without `FunctionResponseTypes: [ReportBatchItemFailures]`, Lambda ignores the `batchItemFailures`
a Powertools `BatchProcessor` answers and either deletes the whole batch (a failed message is lost)
or, when the handler raises, returns every message in it (the ones that succeeded run again). A
batch runs serially inside one invocation, so its size is bounded and stated; the mapping's
`ScalingConfig.MaximumConcurrency` (2 to 1000) bounds how many workers one tick starts at once, and
so the write rate it puts on DynamoDB and the concurrency it takes from the account; a function
reservation under that bound makes Lambda throttle the batches it is handed (the poller does not
count reservations), and throttled receives count towards the queue's maxReceiveCount.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.queues import literal_int

PARTIAL_BATCH_FAILURES: Final = "partial-batch-failures"
REPORT_BATCH_ITEM_FAILURES: Final = "ReportBatchItemFailures"
# Lambda's largest SQS batch without a batching window; a worker's message is a whole partition run.
MAX_BATCH_SIZE: Final = 10
# ScalingConfig.MaximumConcurrency as CloudFormation bounds it for SQS.
MIN_CONCURRENCY: Final = 2
MAX_CONCURRENCY: Final = 1000


def check_partial_batch_failures(project: Project) -> Iterator[Violation]:
    template = project.template
    for logical_id, mapping in template.event_source_mappings.items():
        if mapping.source not in template.queues:
            continue

        def violation(message: str, fix: str, logical_id: str = logical_id) -> Violation:
            return Violation(PARTIAL_BATCH_FAILURES, project.template_file, logical_id, message, fix)

        if REPORT_BATCH_ITEM_FAILURES not in mapping.function_response_types:
            yield violation(
                f"FunctionResponseTypes is {mapping.function_response_types or 'not stated'}: Lambda ignores the "
                "worker's batchItemFailures, so a failed message is deleted with its batch or a batch's successes "
                "run again",
                f"FunctionResponseTypes: [{REPORT_BATCH_ITEM_FAILURES}]",
            )
        stated = mapping.properties.get("BatchSize")
        size = literal_int(stated)
        if size is None or not 1 <= size <= MAX_BATCH_SIZE:
            yield violation(
                f"BatchSize is {stated!r}: state a literal 1 to {MAX_BATCH_SIZE} (the messages of a batch run one "
                "after another in one invocation, and Lambda's SQS default is 10)",
                "BatchSize: 1 (one message is one partition run)",
            )
        window = mapping.batching_window
        if window is None or window > 0:
            yield violation(
                f"MaximumBatchingWindowInSeconds is {mapping.properties.get('MaximumBatchingWindowInSeconds')!r}: "
                "a batching window holds partition messages back and allows batches past 10",
                "leave MaximumBatchingWindowInSeconds out (0)",
            )
        concurrency = mapping.maximum_concurrency
        if concurrency is None or not MIN_CONCURRENCY <= concurrency <= MAX_CONCURRENCY:
            yield violation(
                f"ScalingConfig.MaximumConcurrency is {concurrency!r}: without a literal bound "
                f"({MIN_CONCURRENCY} to {MAX_CONCURRENCY}) one tick may start as many workers as the account allows",
                "ScalingConfig: {MaximumConcurrency: <the job's partitions>}",
            )
        fn = template.functions.get(mapping.function or "")
        reserved = literal_int(fn.prop("ReservedConcurrentExecutions")) if fn is not None else None
        if fn is not None and reserved is not None and concurrency is not None and reserved < concurrency:
            yield violation(
                f"{fn.logical_id} reserves {reserved} concurrent executions, under the mapping's MaximumConcurrency "
                f"{concurrency}: the poller does not count reservations, so Lambda throttles its batches and each "
                "throttled receive counts towards the queue's maxReceiveCount",
                f"ReservedConcurrentExecutions of at least {concurrency}, or MaximumConcurrency at most {reserved}",
            )
        if not mapping.enabled:
            yield violation(
                "Enabled is false: partition messages wait in the queue and no tick finishes",
                "remove Enabled: false (pause a job with its schedule's State instead)",
            )


PARTIAL_BATCH_FAILURES_RULE = Rule(
    PARTIAL_BATCH_FAILURES,
    "SQS event source mappings report batch item failures, with a stated BatchSize of at most 10, no batching "
    "window, a MaximumConcurrency bound no reservation undercuts, and are enabled",
    check_partial_batch_failures,
)
