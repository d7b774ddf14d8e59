"""The one way to plant a violation: a fresh copy of the project (`planted`), edited by a test and
checked by the rule it plants against. Tables of plants are parametrized over the same fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.planting import PlantedCopy


@pytest.fixture
def planted(tmp_path: Path) -> PlantedCopy:
    """A copy of the project as the rules read it, ready for one planted violation."""
    return PlantedCopy.of_project(tmp_path)
