"""The project's lists a new job's package joins (pyproject.toml), and its table (template.yaml).

Each edit is text inserted at one place the file's structure names (a TOML table's key, a
contract's id, the template's tables section), then read back: a list that did not gain the
package, or a template that no longer parses, is an error naming the place, and nothing is written.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any, Final

from clockless_tools.scaffold.names import JobNames
from clockless_tools.template.loader import TemplateError, load_yaml


class WiringError(ValueError):
    """The file lacks the place an edit goes; the message names it."""


@dataclass(frozen=True)
class ListEdit:
    """Add `value` to the one-line list `key = [...]` of the TOML table whose header line is `header`
    (for an array of tables, the entry whose `id = "<contract>"` line follows it)."""

    header: str
    key: str
    value: str
    contract: str | None = None

    def where(self) -> str:
        return f"{self.header}{f' id={self.contract}' if self.contract else ''} {self.key}"


def pyproject_edits(names: JobNames) -> list[ListEdit]:
    """Every list of pyproject.toml that names each function package (the layering rule checks them)."""
    package, code_dir = names.package, names.code_dir
    return [
        ListEdit("[tool.setuptools]", "packages", package),
        ListEdit("[tool.ruff.lint.isort]", "known-first-party", package),
        ListEdit("[tool.mypy]", "mypy_path", code_dir),
        ListEdit("[tool.mypy]", "files", names.package_dir),
        ListEdit("[[tool.mypy.overrides]]", "module", f"{package}.repository", contract="repository"),
        ListEdit("[tool.importlinter]", "root_packages", package),
        ListEdit("[[tool.importlinter.contracts]]", "containers", package, contract="job-layers"),
        ListEdit("[[tool.importlinter.contracts]]", "forbidden_modules", package, contract="kit-independent-of-jobs"),
        ListEdit("[[tool.importlinter.contracts]]", "modules", package, contract="jobs-independent"),
    ]


def wire_pyproject(text: str, names: JobNames) -> str:
    for edit in pyproject_edits(names):
        text = _add_to_list(text, edit)
    text = _add_package_dir(text, names)
    document = tomllib.loads(text)
    if document["tool"]["setuptools"]["package-dir"].get(names.package) != names.package_dir:
        raise WiringError(f"pyproject.toml: [tool.setuptools.package-dir] did not gain {names.package}")
    return text


def _section(text: str, edit: ListEdit) -> tuple[int, int]:
    """Where the TOML table the edit names starts and ends."""
    for header in re.finditer(rf"^{re.escape(edit.header)}\s*$", text, flags=re.M):
        start = header.start()
        following = re.search(r"^\[", text[header.end() :], flags=re.M)
        end = len(text) if following is None else header.end() + following.start()
        body = text[start:end]
        if edit.contract is None or _names_contract(body, edit.contract):
            return start, end
    raise WiringError(f"pyproject.toml: no {edit.where()} to add {edit.value!r} to")


def _names_contract(body: str, contract: str) -> bool:
    if f'id = "{contract}"' in body:
        return True
    # The mypy override for repositories has no id: it is the one listing `<package>.repository` modules.
    return contract == "repository" and re.search(r'^module = \[[^\]]*\.repository"', body, flags=re.M) is not None


def _add_to_list(text: str, edit: ListEdit) -> str:
    start, end = _section(text, edit)
    body = text[start:end]
    line = re.search(rf"^{re.escape(edit.key)} = \[(?P<items>[^\]\n]*)\]$", body, flags=re.M)
    if line is None:
        raise WiringError(f"pyproject.toml: {edit.where()} is not a one-line list")
    items: list[Any] = tomllib.loads(f"x = [{line['items']}]")["x"]
    if edit.value in items:
        return text
    at = start + line.end("items")
    return text[:at] + f', "{edit.value}"' + text[at:]


def _add_package_dir(text: str, names: JobNames) -> str:
    header = "[tool.setuptools.package-dir]"
    match = re.search(rf"^{re.escape(header)}\s*$", text, flags=re.M)
    if match is None:
        raise WiringError(f"pyproject.toml: no {header} to map {names.package} in")
    at = match.end() + 1
    return text[:at] + f'{names.package} = "{names.package_dir}"\n' + text[at:]


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
        - AttributeName: tenant_id
          AttributeType: S
        - AttributeName: item_id
          AttributeType: S
        - AttributeName: due_shard
          AttributeType: S
        - AttributeName: due_at
          AttributeType: S
      KeySchema:
        - AttributeName: tenant_id
          KeyType: HASH
        - AttributeName: item_id
          KeyType: RANGE
      GlobalSecondaryIndexes:
        # Sparse: an item leaves this index when it is applied.
        - IndexName: due-by-time
          KeySchema:
            - AttributeName: due_shard
              KeyType: HASH
            - AttributeName: due_at
              KeyType: RANGE
          Projection:
            ProjectionType: KEYS_ONLY
      PointInTimeRecoverySpecification:
        PointInTimeRecoveryEnabled: true
      SSESpecification:
        SSEEnabled: true

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
