"""The bench's arithmetic: item sizes and read units as DynamoDB counts them, sizes per package."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from clockless_tools.bench import artifacts
from clockless_tools.bench.artifacts import distribution_bytes
from clockless_tools.bench.cold_start import RUNTIME_PROVIDED
from clockless_tools.bench.read_units import attribute_size, item_size, read_units
from clockless_tools.bench.results import Figure
from clockless_tools.bench.workloads import Workload


def test_an_item_is_its_attribute_names_plus_their_values() -> None:
    # Given a string, a number and a boolean
    item: dict[str, dict[str, Any]] = {"name": {"S": "héllo"}, "count": {"N": "12345"}, "ok": {"BOOL": True}}

    # Then: "name" 4 + 6 UTF-8 bytes; "count" 5 + 3 digit pairs + 1; "ok" 2 + 1
    assert item_size(item) == 10 + 9 + 3


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"N": "0.00100"}, 2),  # leading and trailing zeros trimmed: one significant digit
        ({"N": "-1234.5"}, 4),
        ({"B": "AAECAw=="}, 4),  # base64 on the wire, raw bytes counted
        ({"NULL": True}, 1),
        ({"SS": ["ab", "cde"]}, 5),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + (2 + 1) + (2 + 1)),
        ({"M": {"k": {"S": "v"}}}, 3 + 1 + 1 + 1),
    ],
)
def test_attribute_sizes_follow_dynamodbs_rules(value: dict[str, object], size: int) -> None:
    assert attribute_size(value) == size


def test_an_unknown_attribute_type_is_named() -> None:
    with pytest.raises(ValueError, match="'X'"):
        attribute_size({"X": "?"})


def test_a_query_rounds_the_sum_of_its_items_up_to_4_kb_once_and_halves_eventual_reads() -> None:
    # Given two items of 3,000 bytes each (6,000 bytes: two 4 KB units)
    item = {"p": {"S": "x" * 2999}}
    response = {"Items": [item, item]}

    assert read_units("Query", {}, response) == 1.0
    assert read_units("Query", {"ConsistentRead": True}, response) == 2.0


def test_a_read_that_finds_nothing_still_costs_the_minimum() -> None:
    assert read_units("Query", {}, {"Items": []}) == 0.5
    assert read_units("GetItem", {"ConsistentRead": True}, {}) == 1.0


def test_writes_consume_no_read_units() -> None:
    assert read_units("TransactWriteItems", {}, {}) == 0.0
    assert read_units("PutItem", {}, {"Attributes": {"p": {"S": "old"}}}) == 0.0


def test_a_figure_is_its_value_over_its_baseline() -> None:
    figure = Figure("k", "label", "requests", 1, 4, "redelivered without the kit", target="= 1", met=True)

    assert figure.ratio == 0.25
    assert figure.as_dict()["ratio"] == 0.25
    assert Figure("k", "label", "ms", 3.0, None, "none").ratio is None


def test_a_table_workload_keeps_the_work_fixed_and_fills_the_rest() -> None:
    programs = Workload.programs_table(due=50, table_items=100_000)
    sessions = Workload.sessions_table(expired=50, table_items=1_000)

    assert (programs.due_programs, programs.program_items) == (50, 100_000)
    assert programs.not_due_programs + programs.ended_programs == 99_950
    assert (sessions.expired_empty_sessions, sessions.session_items) == (50, 1_000)
    assert sessions.sessions_in_use > sessions.recent_empty_sessions


def test_layer_bytes_are_counted_per_distribution_with_compiled_bytecode_and_own_code(tmp_path: Path) -> None:
    # Given a layer directory as pip leaves it, then compiled, plus the kit's own package
    site = tmp_path / "python"
    (site / "lib").mkdir(parents=True)
    (site / "lib" / "__init__.py").write_text("x" * 100)
    (site / "lib" / "__pycache__").mkdir()
    (site / "lib" / "__pycache__" / "__init__.cpython-313.pyc").write_bytes(b"y" * 40)
    (site / "single.py").write_text("z" * 30)
    (site / "__pycache__").mkdir()
    (site / "__pycache__" / "single.cpython-313.pyc").write_bytes(b"w" * 7)
    info = site / "Some_Lib-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: Some_Lib\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        "lib/__init__.py,,\nsingle.py,,\nSome_Lib-1.0.dist-info/METADATA,,\nSome_Lib-1.0.dist-info/RECORD,,\n"
    )
    (site / "kit").mkdir()
    (site / "kit" / "job.py").write_text("k" * 11)

    sizes = distribution_bytes(site)

    metadata = (info / "METADATA").stat().st_size + (info / "RECORD").stat().st_size
    assert sizes == {"some-lib": 100 + 40 + 30 + 7 + metadata, "kit (not installed by pip)": 11}


def test_the_runtime_sdk_stand_in_copies_only_importable_files_into_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given jmespath, whose RECORD also lists a script three directories above site-packages
    copied: list[Path] = []
    monkeypatch.setattr(shutil, "copy2", lambda _source, destination: copied.append(Path(destination)))
    target = tmp_path / "a" / "b" / "sdk"

    versions = artifacts.copy_runtime_sdk(target)

    assert set(versions) == RUNTIME_PROVIDED
    assert target / "boto3" / "__init__.py" in copied
    assert all(path.resolve().is_relative_to(target.resolve()) for path in copied)
