"""Rule `least-privilege`: planted policies broader than a function's use, each caught."""

from __future__ import annotations

from typing import Any

import pytest

from tests.architecture.planting import PlantedCopy, found
from tests.jobs import DAY, HOUR, job_where

# The jobs the plants go into, picked from template.yaml by shape (tests/jobs.py): its first daily
# and its first hourly fanned-out job.
DAILY_JOB = job_where(period=DAY, fanned_out=True)
HOURLY_JOB = job_where(period=HOUR, fanned_out=True)
TEMPLATE = "template.yaml"


CLEANUP = f"  {HOURLY_JOB.stem}Function:\n"
# The cleanup worker reads and deletes sessions; its coordinator only sends partition messages.
CLEANUP_WORKER = f"  {HOURLY_JOB.stem}WorkerFunction:\n"


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
    planted.replace(TEMPLATE, DELETE_SESSIONS, resource, resource=f"{HOURLY_JOB.stem}TablesPolicy")

    violations = planted.violations("least-privilege")

    found(
        violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}WorkerFunction", containing="allows dynamodb actions on"
    )


def test_a_statement_on_a_table_the_function_does_not_use_is_caught(planted: PlantedCopy) -> None:
    # Given the cleanup worker allowed to delete programs, a table none of its variables names
    planted.replace(
        TEMPLATE, DELETE_SESSIONS, "Resource: !GetAtt ProgramsTable.Arn", resource=f"{HOURLY_JOB.stem}TablesPolicy"
    )

    violations = planted.violations("least-privilege")

    violation = found(
        violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}WorkerFunction", containing="names ProgramsTable"
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
        resource=f"{HOURLY_JOB.stem}Function",
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

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="names SchedulerDeadLetterQueue")


def test_a_full_access_managed_policy_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE, "      Policies:\n", "      Policies:\n        - AmazonDynamoDBFullAccess\n", after=CLEANUP
    )

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing="AmazonDynamoDBFullAccess")


# ---------------------------------------------------------------------------------------------- queues
def test_a_sam_sqs_event_is_caught(planted: PlantedCopy) -> None:
    # Given the cleanup worker fed by SAM's SQS event, which attaches a policy on every queue
    planted.replace(
        TEMPLATE,
        "      Policies:\n",
        "      Events:\n        Work:\n          Type: SQS\n          Properties:\n"
        f"            Queue: !GetAtt {HOURLY_JOB.stem}WorkQueue.Arn\n            BatchSize: 1\n      Policies:\n",
        after=CLEANUP_WORKER,
    )

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}WorkerFunction", containing="Events.Work is a SAM SQS")


def test_the_managed_sqs_poller_policy_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        "      Policies:\n",
        "      Policies:\n        - arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole\n",
        after=CLEANUP_WORKER,
    )

    violations = planted.violations("least-privilege")

    found(
        violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}WorkerFunction", containing="AWSLambdaSQSQueueExecution"
    )


def test_a_coordinator_allowed_to_consume_its_work_queue_is_caught(planted: PlantedCopy) -> None:
    # Given the coordinator, which only sends partitions, allowed to receive them too
    planted.replace(
        TEMPLATE, "Action: [sqs:SendMessage]", "Action: [sqs:SendMessage, sqs:ReceiveMessage]", after=CLEANUP
    )

    violations = planted.violations("least-privilege")

    violation = found(
        violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}Function", containing=f"on {HOURLY_JOB.stem}WorkQueue"
    )
    assert "sqs:receivemessage" in violation.message
    assert "(FanOutPartitions)" in violation.message


@pytest.mark.parametrize("action", ["sqs:DeleteMessage", "sqs:*"])
def test_a_worker_allowed_to_consume_its_dead_letter_queue_is_caught(planted: PlantedCopy, action: str) -> None:
    # Given the worker, which only sends failed items to its DLQ, allowed to take them off it
    planted.replace(
        TEMPLATE,
        "      Policies:\n        - Statement:\n",
        "      Policies:\n        - Statement:\n"
        f"            - Effect: Allow\n              Action: [{action}]\n"
        f"              Resource: !GetAtt {HOURLY_JOB.stem}WorkDeadLetterQueue.Arn\n",
        after=CLEANUP_WORKER,
    )

    violations = planted.violations("least-privilege")

    found(
        violations,
        file=TEMPLATE,
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
        containing=f"allows {action.lower()} on {HOURLY_JOB.stem}WorkDeadLetterQueue",
    )


def test_a_worker_allowed_on_the_other_jobs_work_queue_is_caught(planted: PlantedCopy) -> None:
    planted.replace(
        TEMPLATE,
        f"                - !GetAtt {HOURLY_JOB.stem}WorkQueue.Arn\n",
        f"                - !GetAtt {HOURLY_JOB.stem}WorkQueue.Arn\n"
        f"                - !GetAtt {DAILY_JOB.stem}WorkQueue.Arn\n",
        resource=f"{HOURLY_JOB.stem}WorkerFunction",
    )

    violations = planted.violations("least-privilege")

    found(
        violations, file=TEMPLATE, resource=f"{HOURLY_JOB.stem}WorkerFunction", containing=f"names {DAILY_JOB.stem}Work"
    )


# ---------------------------------------------------------------------------------------------- what the code calls
TRIGGER = "  JobTriggerFunction:\n"


def test_tracing_on_a_function_whose_code_sends_no_traces_is_caught(planted: PlantedCopy) -> None:
    # Given the trigger with Tracing: PassThrough, for which SAM attaches AWSXrayWriteOnlyAccess
    planted.replace(TEMPLATE, "      Policies:\n", "      Tracing: PassThrough\n      Policies:\n", after=TRIGGER)

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing="Tracing: PassThrough makes SAM attach")


def test_an_xray_managed_policy_the_code_does_not_use_is_caught(planted: PlantedCopy) -> None:
    planted.replace(TEMPLATE, "      Policies:\n", "      Policies:\n        - AWSXrayWriteOnlyAccess\n", after=TRIGGER)

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource="JobTriggerFunction", containing="attaches AWSXrayWriteOnlyAccess")


CREATE_WINDOWS = "Action: [dynamodb:PutItem]"


def test_condition_check_item_on_a_table_no_code_checks_is_caught_and_allowed_once_the_code_checks(
    planted: PlantedCopy,
) -> None:
    # Given the daily job's worker allowed ConditionCheckItem on its windows table, which its code only puts to
    planted.replace(
        TEMPLATE,
        CREATE_WINDOWS,
        "Action: [dynamodb:PutItem, dynamodb:ConditionCheckItem]",
        resource=f"{DAILY_JOB.stem}TablesPolicy",
    )

    violation = found(
        planted.violations("least-privilege"),
        file=TEMPLATE,
        resource=f"{DAILY_JOB.stem}WorkerFunction",
        containing="allows dynamodb:ConditionCheckItem on WindowsTable, and no code the function runs checks it",
    )
    assert "(CreateWindows)" in violation.message

    # When its code does check an item in a transaction, the same grant is what it uses
    repository = f"functions/{DAILY_JOB.package}/{DAILY_JOB.package}/repository.py"
    planted.write(
        repository,
        (planted.root / repository).read_text(encoding="utf-8")
        + "\n\ndef _check(transaction: TransactWrite, item: Any) -> None:\n"
        "    transaction.condition_check(type(item), item.get_hash_key(), condition=None)\n",
    )

    assert not [v for v in planted.violations("least-privilege") if "ConditionCheckItem" in v.message]


# ---------------------------------------------------------------------------------------------- overlap's ledger calls
HOLD_ACTIONS = ("dynamodb:Query", "dynamodb:PutItem", "dynamodb:ConditionCheckItem")
RUN_BOTH_LEDGER = "Action: [dynamodb:UpdateItem]\n              Resource: !GetAtt LedgerTable.Arn"
LAST_SUCCESS_DENIED = "- Sid: BufferedTickLastSuccess\n              Effect: Deny"


def _declare_in_code(planted: PlantedCopy, package: str, policy: str) -> None:
    relative = f"functions/{package}/{package}/handler.py"
    planted.replace(relative, "job = ScheduledJob(JOB_NAME)", f'job = ScheduledJob(JOB_NAME, overlap="{policy}")')


def test_a_run_both_coordinator_granted_the_hold_calls_is_caught(planted: PlantedCopy) -> None:
    # Given the hourly job's coordinator allowed what a skip or buffer policy sends (the grant every
    # job had before its policy picked it), while its code declares no policy (run-both)
    planted.replace(
        TEMPLATE,
        RUN_BOTH_LEDGER,
        RUN_BOTH_LEDGER.replace("[dynamodb:UpdateItem]", "[dynamodb:UpdateItem, " + ", ".join(HOLD_ACTIONS) + "]"),
        resource=HOURLY_JOB.function_id,
    )

    violations = planted.violations("least-privilege")

    for action in HOLD_ACTIONS:
        violation = found(
            violations, file=TEMPLATE, resource=HOURLY_JOB.function_id, containing=f"may {action} on LedgerTable"
        )
        assert "only overlap='skip' or 'buffer' sends" in violation.message
        assert "declares overlap='run-both'" in violation.message
        assert "Overlap: run-both" in violation.fix


def test_a_worker_of_a_job_that_does_not_buffer_allowed_the_last_success_is_caught(planted: PlantedCopy) -> None:
    # Given the hourly job's worker allowed the index query only a buffered tick's start sends
    planted.replace(
        TEMPLATE,
        LAST_SUCCESS_DENIED,
        LAST_SUCCESS_DENIED.replace("Deny", "Allow"),
        resource=str(HOURLY_JOB.worker_id),
    )

    violation = found(
        planted.violations("least-privilege"),
        file=TEMPLATE,
        resource=str(HOURLY_JOB.worker_id),
        containing="may dynamodb:Query on LedgerTable/index/succeeded-by-time, which only overlap='buffer' sends",
    )
    assert f"{HOURLY_JOB.function_id}'s code declares overlap='run-both'" in violation.message


def test_a_declaration_that_buffers_for_a_job_whose_code_skips_is_caught(planted: PlantedCopy) -> None:
    # Given the code skips and the template's declaration says buffer: the worker's grant is a buffer's
    _declare_in_code(planted, DAILY_JOB.package, "skip")
    planted.declare_overlap({DAILY_JOB.stem: "buffer"})

    violations = planted.violations("least-privilege")

    found(violations, file=TEMPLATE, resource=str(DAILY_JOB.worker_id), containing="only overlap='buffer' sends")
    assert not [v for v in violations if v.resource == DAILY_JOB.function_id]


@pytest.mark.parametrize("policy", ["skip", "buffer"])
def test_a_policy_declared_alike_in_code_and_template_is_granted_exactly(planted: PlantedCopy, policy: str) -> None:
    _declare_in_code(planted, DAILY_JOB.package, policy)
    planted.declare_overlap({DAILY_JOB.stem: policy})

    violations = planted.violations("least-privilege") + planted.violations("overlap-declared")

    assert violations == []
    statements = _statements(planted, DAILY_JOB.function_id) | _statements(planted, str(DAILY_JOB.worker_id))
    assert set(HOLD_ACTIONS) <= set(statements["RunLedger"]["Action"])
    assert statements["BufferedTickLastSuccess"]["Effect"] == ("Allow" if policy == "buffer" else "Deny")


def _statements(planted: PlantedCopy, logical_id: str) -> dict[str, dict[str, Any]]:
    fn = planted.project.template.functions[logical_id]
    return {
        str(statement["Sid"]): statement
        for policy in fn.prop("Policies")
        if isinstance(policy, dict) and "Statement" in policy
        for statement in policy["Statement"]
    }


def test_the_ledger_query_is_the_tick_reapers_only_while_its_handler_runs_the_reaper(planted: PlantedCopy) -> None:
    # Given the template as it is: the reaper's role may Query the ledger, which its code does
    assert not [v for v in planted.violations("least-privilege") if "TickReaper" in v.resource]

    # When its handler no longer runs the kit's reaper
    planted.replace(
        "functions/tick_reaper/tick_reaper/handler.py", "from clockless.reaper import", "from clockless.ledger import"
    )

    # Then the grant is one nothing of it sends
    violation = found(
        planted.violations("least-privilege"),
        file=TEMPLATE,
        resource="TickReaperFunction",
        containing="may dynamodb:Query on LedgerTable",
    )
    assert "only overlap='skip' or 'buffer' sends" in violation.message
