"""Which tables a job's effects land in, and which the kit keeps for itself."""

from __future__ import annotations

from collections.abc import Mapping

from clockless_tools.local.event_sources import worker_functions
from clockless_tools.simulate.request import BOOKKEEPING_KINDS
from clockless_tools.template.model import Template


def bookkeeping_tables(template: Template) -> set[str]:
    """Logical ids of tables the kit keeps for itself (idempotency records, the run ledger)."""
    return set(template.tables_of_kind(*BOOKKEEPING_KINDS))


def job_tables(template: Template, function_id: str) -> list[str]:
    """The domain tables the job's function and its workers declare (`Metadata: clockless: tables`)
    or name in their own environment (`!Ref <Table>`; Globals' names every job's): where its effects
    land."""
    domain = template.tables.keys() - bookkeeping_tables(template)
    found: list[str] = []
    for logical_id in [function_id, *worker_functions(template, function_id)]:
        function = template.function(logical_id)
        named = [value.get("Ref") for value in function.own_environment.values() if isinstance(value, Mapping)]
        for table in [*function.declared_tables, *named]:
            if table in domain and table not in found:
                found.append(str(table))
    return found
