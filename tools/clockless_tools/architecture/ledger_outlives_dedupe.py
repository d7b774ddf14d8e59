"""Rule ledger-outlives-dedupe: the run ledger keeps a tick's record at least as long as the
longest idempotency record lives.

Once a ledger entry has expired while the tick's idempotency record still lives, the ledger no
longer shows the tick: `clockless status` calls it missing, and `clockless backfill --policy
skip` records `skipped` for a tick that ran (a replay would only meet the live record). So every
retention a deploy can choose (the parameter's Default and its MinValue, or a literal) is
checked against the longest IDEMPOTENCY_EXPIRY_SECONDS of any function.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.dedupe_outlives_retries import EXPIRY_VARIABLE
from clockless_tools.architecture.project import Project, Rule, Violation

LEDGER_OUTLIVES_DEDUPE: Final = "ledger-outlives-dedupe"
# The variable the kit reads the ledger's retention from, in days.
RETENTION_VARIABLE: Final = "LEDGER_RETENTION_DAYS"
DAY: Final = 86400


def check_ledger_outlives_dedupe(project: Project) -> Iterator[Violation]:
    expiries = {
        logical_id: expiry
        for logical_id, fn in project.template.functions.items()
        if (expiry := project.literal_int(fn.environment.get(EXPIRY_VARIABLE))) is not None
    }
    if not expiries:
        return  # no idempotency record to outlive (dedupe-outlives-retries asks for one)
    longest_id = max(expiries, key=lambda logical_id: expiries[logical_id])
    longest = expiries[longest_id]
    needed_days = -(-longest // DAY)
    for logical_id, fn in project.template.functions.items():
        if RETENTION_VARIABLE not in fn.environment:
            continue
        for resource, days, source in _retentions(project, logical_id, fn.environment[RETENTION_VARIABLE]):
            if days is None:
                message = f"{source} is not stated as a number of days, so a deploy may choose any retention"
            elif days * DAY < longest:
                message = (
                    f"{source} is {days} day(s), shorter than {longest_id}'s {EXPIRY_VARIABLE} {longest} s: the "
                    "ledger forgets a tick its idempotency record still holds, and backfill --policy skip records "
                    "it as skipped"
                )
            else:
                continue
            yield Violation(
                LEDGER_OUTLIVES_DEDUPE, project.template_file, resource, message, f"make it at least {needed_days}"
            )


def _retentions(project: Project, logical_id: str, value: Any) -> Iterator[tuple[str, int | None, str]]:
    """Every retention in days a deploy can give the function: (where, days or None if unknowable, what)."""
    parameters: Mapping[str, Any] = project.template.document.get("Parameters") or {}
    if isinstance(value, Mapping) and set(value) == {"Ref"} and value["Ref"] in parameters:
        name = str(value["Ref"])
        parameter = parameters[name] if isinstance(parameters[name], Mapping) else {}
        for bound in ("Default", "MinValue"):
            yield f"Parameters.{name}", project.literal_int(parameter.get(bound)), f"{name}'s {bound}"
        return
    yield logical_id, project.literal_int(value), f"{logical_id}'s {RETENTION_VARIABLE}"


LEDGER_OUTLIVES_DEDUPE_RULE = Rule(
    LEDGER_OUTLIVES_DEDUPE,
    "LedgerRetentionDays (Default and MinValue) >= the longest IDEMPOTENCY_EXPIRY_SECONDS of any function",
    check_ledger_outlives_dedupe,
)
