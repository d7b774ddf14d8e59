"""bench/artifacts.py: what ships, counted per distribution, and the runtime SDK stand-in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clockless_tools.bench import artifacts
from clockless_tools.bench.artifacts import distribution_bytes
from clockless_tools.bench.cold_start import RUNTIME_PROVIDED


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
