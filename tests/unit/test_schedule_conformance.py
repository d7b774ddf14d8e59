"""Every row of the conformance table (AWS's words, hand-worked ticks) against the tick engine."""

from __future__ import annotations

import pytest

from clockless.schedule.expressions import ScheduleExpressionError
from clockless_tools.template.conformance import DISAGREE, SILENT, SOURCES, Case
from clockless_tools.template.conformance_cases import CASES


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
        assert case.says.startswith((SILENT, DISAGREE)) or not case.says.startswith("AWS"), case.name
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


def test_the_aws_croniter_defects_docs_schedules_md_reports_are_still_there() -> None:
    """docs/schedules.md reports these upstream-style; when aws-croniter fixes one, this says so."""
    from datetime import UTC, datetime

    from aws_croniter import AwsCroniter

    year = (datetime(2028, 1, 1, tzinfo=UTC), datetime(2029, 1, 1, tzinfo=UTC))
    assert AwsCroniter("0 12 ? * L *").get_all_schedule_bw_dates(*year) == []
    far = AwsCroniter("0 0 ? 2 1#5 *").get_all_schedule_bw_dates(
        datetime(2027, 1, 1, tzinfo=UTC), datetime(2199, 1, 1, tzinfo=UTC)
    )
    assert far == [datetime(2032, 2, 29, tzinfo=UTC)]
    with pytest.raises(ValueError, match="invalid literal for int"):
        AwsCroniter("0 12 LW * ? *")
    assert len(AwsCroniter("0 12 L-2 * ? *").get_all_schedule_bw_dates(*year)) == 12
