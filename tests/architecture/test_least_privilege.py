"""Rule `least-privilege`: planted policies broader than a function's use, each caught."""

from __future__ import annotations

import pytest

from tests.architecture.planting import PlantedCopy, found

TEMPLATE = "template.yaml"


CLEANUP = "  SessionCleanupFunction:\n"
# The cleanup worker reads and deletes sessions; its coordinator only sends partition messages.
CLEANUP_WORKER = "  SessionCleanupWorkerFunction:\n"


# ---------------------------------------------------------------------------------------------- least-privilege
DELETE_SESSIONS = "Resource: !GetAtt SessionsTable.Arn"


@pytest.mark.parametrize(
    "resource",
    [
        'Resource: "*"',
        "Resource: [!GetAtt SessionsTable.Arn, '*']",
        "Resource: !Sub 'arn:aws:dynamodb:${AWS::Region}:${AWS::AccountId}:table/*'",
    ],
    ids=["star", "star-in-list", "every-table"],
)
def test_a_wildcard_resource_on_dynamodb_actions_is_caught(planted: PlantedCopy, resource: str) -> None:
    planted.replace(TEMPLATE, DELETE_SESSIONS, resource, after=CLEANUP_WORKER)

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource="SessionCleanupWorkerFunction", containing="allows dynamodb actions on")


def test_a_statement_on_a_table_the_function_does_not_use_is_caught(planted: PlantedCopy) -> None:
    # Given the cleanup worker allowed to delete programs, a table none of its variables names
    planted.replace(TEMPLATE, DELETE_SESSIONS, "Resource: !GetAtt ProgramsTable.Arn", after=CLEANUP_WORKER)

    violations = planted.violations("least-privilege")

    violation = found(
        violations, file=TEMPLATE, resource="SessionCleanupWorkerFunction", containing="names ProgramsTable"
    )
    assert "(DeleteEmptySessions)" in violation.message


def test_a_managed_crud_policy_on_an_unused_table_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      Policies:\n",
        "      Policies:\n        - DynamoDBCrudPolicy:\n            TableName: !Ref WindowsTable\n",
        after=CLEANUP,
    )

    violations = planted.violations("least-privilege")

    found(
        violations,
        file=TEMPLATE,
        resource="SessionCleanupFunction",
        containing="DynamoDBCrudPolicy grants WindowsTable",
    )


def test_a_statement_on_a_queue_the_function_does_not_use_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      Policies:\n        - Statement:\n",
        "      Policies:\n        - Statement:\n"
        "            - Effect: Allow\n"
        "              Action: [sqs:ReceiveMessage]\n"
        "              Resource: !GetAtt SchedulerDeadLetterQueue.Arn\n",
        after=CLEANUP,
    )

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource="SessionCleanupFunction", containing="names SchedulerDeadLetterQueue")


def test_a_full_access_managed_policy_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "      Policies:\n", "      Policies:\n        - AmazonDynamoDBFullAccess\n", after=CLEANUP
    )

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource="SessionCleanupFunction", containing="AmazonDynamoDBFullAccess")
