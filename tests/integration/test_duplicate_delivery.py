"""A duplicate delivery of any scheduled job costs exactly one DynamoDB request: the kit's claim,
refused because the tick is done. Parametrized over every scheduled function of template.yaml, so
a new job is covered the day it is added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clockless_tools.local.botocore_hooks import count_requests
from clockless_tools.local.runtime import LocalLambdaRuntime
from clockless_tools.template.loader import DEFAULT_TEMPLATE
from clockless_tools.template.model import Template
from tests.integration.conftest import delivery

SCHEDULED = Template.load(DEFAULT_TEMPLATE).scheduled_functions


@pytest.mark.parametrize("function", sorted(SCHEDULED))
def test_duplicate_delivery_costs_exactly_one_dynamodb_request(
    function: str, tables: Any, function_env: Any, runtime: LocalLambdaRuntime
) -> None:
    # Given the tick delivered once
    function_env(function)
    sample = f"{Path(SCHEDULED[function].code_uri).name}/tick.json"
    runtime.call(function, delivery(sample))

    # When the scheduler delivers it again
    with count_requests() as requests:
        result = runtime.call(function, delivery(sample, attempt=2))

    # Then the kit's claim is the only request (its transaction, cancelled by its condition,
    # returns the completed record), and it says so
    assert result["outcome"] == "duplicate"
    assert dict(requests.operations) == {"TransactWriteItems": 1}
