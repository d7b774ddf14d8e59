"""Powertools' DynamoDB persistence layer, with the tick's completion and its ledger entry
written in one transaction: the ledger says "succeeded" exactly when the claim says "completed",
and a first delivery pays one request for both."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord

from clockless.ledger import RunLedger


class LedgeredPersistenceLayer(DynamoDBPersistenceLayer):
    def __init__(self, *, table_name: str, ledger_table_name: str, ledger_retention_seconds: int) -> None:
        super().__init__(table_name=table_name)
        self.ledger = RunLedger(ledger_table_name, self.client, retention_seconds=ledger_retention_seconds)

    def _update_record(self, data_record: DataRecord) -> None:
        if data_record.status != STATUS_CONSTANTS["COMPLETED"] or not data_record.response_data:
            super()._update_record(data_record)
            return
        if self.payload_validation_enabled:
            raise NotImplementedError("payload validation is not used by clockless jobs")
        result = json.loads(data_record.response_data)
        # The same update Powertools makes for a completed record, as one half of a transaction.
        completion: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": self._get_key(data_record.idempotency_key),
            "UpdateExpression": "SET #response_data = :response_data, #expiry = :expiry, #status = :status",
            "ExpressionAttributeNames": {
                "#expiry": self.expiry_attr,
                "#response_data": self.data_attr,
                "#status": self.status_attr,
            },
            "ExpressionAttributeValues": {
                ":expiry": {"N": str(data_record.expiry_timestamp)},
                ":response_data": {"S": data_record.response_data},
                ":status": {"S": data_record.status},
            },
        }
        transaction: list[Any] = [{"Update": completion}, {"Update": self.ledger.succeeded_update(result)}]
        self.client.transact_write_items(TransactItems=transaction)
