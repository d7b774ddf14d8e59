"""A new job's table in template.yaml. (Its package joins no list: setup.py, ruff, mypy and the
import contracts find every functions/<package>/<package>; docs/decisions.md, "Packages found, not listed".)

The table is text inserted where the template's tables section ends, then read back: a template
that no longer parses, or no longer has the table, is an error naming the place, and nothing is written.
"""

from __future__ import annotations

import re
from typing import Final

from clockless_tools.errors import ToolError
from clockless_tools.scaffold.names import JobNames
from clockless_tools.template.loader import TemplateError, load_yaml


class WiringError(ToolError, ValueError):
    """The file lacks the place an edit goes; the message names it."""


TABLES_SECTION: Final = "  # ---------------------------------------------------------------- tables\n"

TABLE: Final = """  __STEM__Table:
    # Made by `clockless new job __JOB__`: its items, the waiting ones in the sparse due index
    # (functions/__PACKAGE__/__PACKAGE__/repository.py). Change both together.
    Type: AWS::DynamoDB::Table
    DeletionPolicy: Retain
    UpdateReplacePolicy: Retain
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - {AttributeName: tenant_key, AttributeType: S}
        - {AttributeName: item_id, AttributeType: S}
        - {AttributeName: due_shard, AttributeType: S}
        - {AttributeName: due_at, AttributeType: S}
      KeySchema: [{AttributeName: tenant_key, KeyType: HASH}, {AttributeName: item_id, KeyType: RANGE}]
      GlobalSecondaryIndexes:
        # Sparse: an item leaves this index when it is applied.
        - IndexName: due-by-time
          KeySchema: [{AttributeName: due_shard, KeyType: HASH}, {AttributeName: due_at, KeyType: RANGE}]
          Projection: {ProjectionType: KEYS_ONLY}
      PointInTimeRecoverySpecification: {PointInTimeRecoveryEnabled: true}
      SSESpecification: {SSEEnabled: true}

"""


def add_table(text: str, names: JobNames) -> str:
    """template.yaml with the job's table as the tables section's last resource."""
    if text.count(TABLES_SECTION) != 1:
        raise WiringError("template.yaml: no `# ---- tables` section header to add the job's table under")
    start = text.index(TABLES_SECTION) + len(TABLES_SECTION)
    following = re.search(r"^  # -{10,}", text[start:], flags=re.M)
    if following is None:
        raise WiringError("template.yaml: nothing follows the tables section to add the table before")
    at = start + following.start()
    edited = text[:at] + names.fill(TABLE) + text[at:]
    try:
        document = load_yaml(edited)
    except TemplateError as error:
        raise WiringError(f"template.yaml would not parse with the table added: {error}") from None
    if names.table_id not in document["Resources"]:
        raise WiringError(f"template.yaml: {names.table_id} did not land in Resources")
    return edited
