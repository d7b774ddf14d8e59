"""Architecture rules over template.yaml and the code: the failures that compile fine and say nothing.

One module per rule, named after the rule id `clockless arch` reports (`least-privilege` is
`least_privilege.py`, tests/architecture/test_least_privilege.py plants its violations). Each rule
takes a `Project` (`project.py`: the template and the code on disk) and yields every `Violation`
it finds, each with a one-line fix; `code.py` reads what Python code does from its syntax tree.
`check` runs them all and reports everything at once; `clockless arch` and tests/architecture
call it.
"""

from __future__ import annotations

from collections.abc import Iterable

from clockless_tools.architecture.architecture_from_parameter import ARCHITECTURE_FROM_PARAMETER_RULE
from clockless_tools.architecture.conditional_writes import CONDITIONAL_WRITES_RULE
from clockless_tools.architecture.dead_man_alarm import DEAD_MAN_ALARM_RULE
from clockless_tools.architecture.declared_keys import in_declaration_terms
from clockless_tools.architecture.dedupe_outlives_retries import DEDUPE_OUTLIVES_RETRIES_RULE
from clockless_tools.architecture.duration_bound import DURATION_BOUND_RULE
from clockless_tools.architecture.environment_size import ENVIRONMENT_SIZE_RULE
from clockless_tools.architecture.event_samples import EVENT_SAMPLES_RULE
from clockless_tools.architecture.failure_paths import FAILURE_PATHS_RULE
from clockless_tools.architecture.import_graph import IMPORT_GRAPH_RULE
from clockless_tools.architecture.layering import LAYERING_RULE
from clockless_tools.architecture.least_privilege import LEAST_PRIVILEGE_RULE
from clockless_tools.architecture.ledger_outlives_dedupe import LEDGER_OUTLIVES_DEDUPE_RULE
from clockless_tools.architecture.ledger_queues_retained import LEDGER_QUEUES_RETAINED_RULE
from clockless_tools.architecture.local_tick_alarm import LOCAL_TICK_ALARM_RULE
from clockless_tools.architecture.local_time import LOCAL_TIME_RULE
from clockless_tools.architecture.log_groups import LOG_GROUPS_RULE
from clockless_tools.architecture.no_clock_in_app import NO_CLOCK_IN_APP_RULE
from clockless_tools.architecture.no_wall_clock import NO_WALL_CLOCK_RULE
from clockless_tools.architecture.overlap_declared import OVERLAP_DECLARED_RULE
from clockless_tools.architecture.partial_batch_failures import PARTIAL_BATCH_FAILURES_RULE
from clockless_tools.architecture.project import Project, ProjectError, Rule, Violation
from clockless_tools.architecture.rate_anchored import RATE_ANCHORED_RULE
from clockless_tools.architecture.reaper_covers_fan_out import REAPER_COVERS_FAN_OUT_RULE
from clockless_tools.architecture.schedule_delivery import SCHEDULE_DELIVERY_RULE
from clockless_tools.architecture.scheduled_by_kit import SCHEDULED_BY_KIT_RULE
from clockless_tools.architecture.secret_comparison import SECRET_COMPARISON_RULE
from clockless_tools.architecture.shards_match_concurrency import SHARDS_MATCH_CONCURRENCY_RULE
from clockless_tools.architecture.tenant_keys_spread import TENANT_KEYS_SPREAD_RULE
from clockless_tools.architecture.tick_identity import TICK_IDENTITY_RULE
from clockless_tools.architecture.ticks_on_the_minute import TICKS_ON_THE_MINUTE_RULE
from clockless_tools.architecture.time_budget import TIME_BUDGET_RULE
from clockless_tools.architecture.trigger_schedules import TRIGGER_SCHEDULES_RULE
from clockless_tools.architecture.trigger_targets import TRIGGER_TARGETS_RULE
from clockless_tools.architecture.visibility_covers_timeout import VISIBILITY_COVERS_TIMEOUT_RULE
from clockless_tools.architecture.work_permissions import WORK_PERMISSIONS_RULE
from clockless_tools.architecture.work_queue_redrive import WORK_QUEUE_REDRIVE_RULE
from clockless_tools.architecture.worker_by_kit import WORKER_BY_KIT_RULE
from clockless_tools.template.loader import TemplateError

RULES: tuple[Rule, ...] = (
    SCHEDULED_BY_KIT_RULE,
    SCHEDULE_DELIVERY_RULE,
    RATE_ANCHORED_RULE,
    TICK_IDENTITY_RULE,
    TICKS_ON_THE_MINUTE_RULE,
    DEDUPE_OUTLIVES_RETRIES_RULE,
    LEDGER_OUTLIVES_DEDUPE_RULE,
    LEDGER_QUEUES_RETAINED_RULE,
    NO_CLOCK_IN_APP_RULE,
    NO_WALL_CLOCK_RULE,
    CONDITIONAL_WRITES_RULE,
    EVENT_SAMPLES_RULE,
    LEAST_PRIVILEGE_RULE,
    LAYERING_RULE,
    IMPORT_GRAPH_RULE,
    ENVIRONMENT_SIZE_RULE,
    SECRET_COMPARISON_RULE,
    TRIGGER_TARGETS_RULE,
    TRIGGER_SCHEDULES_RULE,
    DEAD_MAN_ALARM_RULE,
    FAILURE_PATHS_RULE,
    DURATION_BOUND_RULE,
    LOCAL_TIME_RULE,
    LOCAL_TICK_ALARM_RULE,
    LOG_GROUPS_RULE,
    WORKER_BY_KIT_RULE,
    PARTIAL_BATCH_FAILURES_RULE,
    WORK_QUEUE_REDRIVE_RULE,
    VISIBILITY_COVERS_TIMEOUT_RULE,
    SHARDS_MATCH_CONCURRENCY_RULE,
    REAPER_COVERS_FAN_OUT_RULE,
    TENANT_KEYS_SPREAD_RULE,
    TIME_BUDGET_RULE,
    WORK_PERMISSIONS_RULE,
    OVERLAP_DECLARED_RULE,
    ARCHITECTURE_FROM_PARAMETER_RULE,
)


def check(project: Project, rules: Iterable[Rule] = RULES) -> list[Violation]:
    """Every violation of every rule. Raises TemplateError only when the template itself is unreadable."""
    project.template  # noqa: B018 - an unreadable template is bad input, not a violation
    violations: list[Violation] = []
    for rule in rules:
        try:
            violations.extend(rule.check(project))
        except (TemplateError, ProjectError) as error:
            violations.append(
                Violation(rule.name, project.template_file, "-", f"cannot be checked: {error}", "fix what it names")
            )
    # A declared job's fix names the Mappings key the user edits (declared_keys.py), not only the property.
    return [in_declaration_terms(violation, project.template) for violation in dict.fromkeys(violations)]


__all__ = ["RULES", "Project", "ProjectError", "Rule", "Violation", "check"]
