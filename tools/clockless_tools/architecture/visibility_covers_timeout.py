"""Rule `visibility-covers-timeout`: a message is not handed to a second worker while the first may
still be running it.

Lambda's guidance for an SQS event source is a queue `VisibilityTimeout` of at least six times the
function's `Timeout`: the poller may hold a batch while it retries a throttled invoke, and the
whole of that must pass before the message reappears. Lambda itself only refuses a visibility
timeout below the function timeout when it creates the mapping, and cfn-lint (1.58, with the
serverless rules) relates no queue to the function its mapping feeds: it passes a queue of 200 s
feeding a function of 300 s;
a visibility timeout under the bound makes a running partition's message visible again, and a
second worker takes the lease over as soon as the first one's lease runs out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.project import Project, Rule, Violation
from clockless_tools.template.queues import DEFAULT_VISIBILITY_TIMEOUT

VISIBILITY_COVERS_TIMEOUT: Final = "visibility-covers-timeout"
TIMEOUT_MULTIPLE: Final = 6


def check_visibility_covers_timeout(project: Project) -> Iterator[Violation]:
    template = project.template
    for mapping in template.event_source_mappings.values():
        queue = template.queues.get(mapping.source or "")
        fn = template.functions.get(mapping.function or "")
        if queue is None or fn is None:
            continue
        needed = TIMEOUT_MULTIPLE * fn.timeout
        visibility = queue.visibility_timeout
        if visibility is None or visibility < needed:
            stated = queue.properties.get("VisibilityTimeout", f"the default {DEFAULT_VISIBILITY_TIMEOUT}")
            yield Violation(
                VISIBILITY_COVERS_TIMEOUT,
                project.template_file,
                queue.logical_id,
                f"VisibilityTimeout is {stated!r} s, under {TIMEOUT_MULTIPLE} x {fn.logical_id}'s Timeout "
                f"{fn.timeout} s = {needed} s: a message a worker is still running becomes visible to another",
                f"VisibilityTimeout: {needed} (or lower {fn.logical_id}'s Timeout)",
            )


VISIBILITY_COVERS_TIMEOUT_RULE = Rule(
    VISIBILITY_COVERS_TIMEOUT,
    "every queue an event source mapping reads has a VisibilityTimeout of at least 6 x its function's Timeout",
    check_visibility_covers_timeout,
)
