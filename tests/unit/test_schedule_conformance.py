"""Every row of the conformance table (AWS's words, hand-worked ticks) against the tick engine."""

from __future__ import annotations

import pytest

from clockless_tools.template.conformance import SILENT, SOURCES, Case
from clockless_tools.template.conformance_cases import CASES
from clockless_tools.template.expressions import ScheduleExpressionError


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_engine_gives_the_ticks_aws_documents(case: Case) -> None:
    if case.refused is not None:
        with pytest.raises(ScheduleExpressionError) as refused:
            case.engine_ticks()
        assert case.refused in str(refused.value)
    else:
        assert case.engine_ticks() == case.ticks


def test_every_row_cites_a_page_and_a_sentence_or_says_aws_is_silent() -> None:
    for case in CASES:
        assert case.source in SOURCES, case.name
        assert len(case.says) > 10, case.name
        assert case.says.startswith(SILENT) or not case.says.startswith("AWS"), case.name
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))


def test_the_table_covers_every_wildcard_in_every_field_aws_allows_it() -> None:
    allowed = {
        "minutes": ",-*/",
        "hours": ",-*/",
        "day-of-month": ",-*?/LW",
        "month": ",-*/",
        "day-of-week": ",-*?L#",
        "year": ",-*/",
    }
    accepted = [case for case in CASES if case.refused is None and case.expression.startswith("cron(")]
    for index, (field, wildcards) in enumerate(allowed.items()):
        for wildcard in wildcards:
            assert any(wildcard in case.expression[5:-1].split()[index] for case in accepted), (
                f"no accepted row uses {wildcard} in {field}"
            )
