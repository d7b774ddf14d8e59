"""Planted violations of architecture-from-parameter, each caught: every function's and layer's
architecture is the Architecture parameter, through Globals, and none fixes its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clockless_tools.template.loader import load_yaml
from clockless_tools.template.render import render
from tests.architecture.planting import PlantedCopy, found
from tests.jobs import job_where

RULE = "architecture-from-parameter"
TEMPLATE = "template.yaml"
LAYER = "ClocklessLayer"
JOB = job_where(fanned_out=True)


def _edit_document(planted: PlantedCopy, edit: Callable[[dict[str, Any]], None]) -> None:
    path = planted.root / TEMPLATE
    document = load_yaml(path.read_text(encoding="utf-8"))
    edit(document)
    path.write_text(render(document), encoding="utf-8")


def test_the_template_as_it_is_holds(planted: PlantedCopy) -> None:
    assert planted.violations(RULE) == []


def test_a_function_that_fixes_its_own_architecture_is_caught(planted: PlantedCopy) -> None:
    # Given the fanned-out job's worker written for arm64 whatever the parameter says
    worker = f"{JOB.stem}WorkerFunction"
    planted.edit_resource(worker, lambda resource: resource["Properties"].update(Architectures=["arm64"]))

    violations = planted.violations(RULE)

    violation = found(violations, file=TEMPLATE, resource=worker, containing="sets its own Architectures ['arm64']")
    assert violation.fix == "remove Architectures from the function: it comes from Globals"
    assert len(violations) == 1


def test_globals_that_fix_the_architecture_are_caught(planted: PlantedCopy) -> None:
    _edit_document(planted, lambda document: document["Globals"]["Function"].update(Architectures=["x86_64"]))

    violations = planted.violations(RULE)

    found(violations, file=TEMPLATE, resource="Globals.Function", containing="Architectures is ['x86_64']")
    assert len(violations) == 1


@pytest.mark.parametrize(
    ("where", "value", "containing"),
    [
        ("CompatibleArchitectures", ["arm64"], "CompatibleArchitectures is ['arm64']"),
        ("BuildArchitecture", "arm64", "Metadata.BuildArchitecture is 'arm64'"),
        ("BuildArchitecture", None, "SAM builds for x86_64 when it is missing"),
    ],
    ids=["compatible-with-one", "built-for-one", "built-for-x86_64-by-default"],
)
def test_a_layer_fixed_to_one_architecture_is_caught(
    planted: PlantedCopy, where: str, value: Any, containing: str
) -> None:
    def plant(resource: dict[str, Any]) -> None:
        section = resource["Properties"] if where == "CompatibleArchitectures" else resource["Metadata"]
        if value is None:
            del section[where]
        else:
            section[where] = value

    planted.edit_resource(LAYER, plant)

    violations = planted.violations(RULE)

    found(violations, file=TEMPLATE, resource=LAYER, containing=containing)
    assert len(violations) == 1


def test_a_template_without_the_parameter_is_caught(planted: PlantedCopy) -> None:
    _edit_document(planted, lambda document: document["Parameters"]["Architecture"].update(AllowedValues=["arm64"]))

    violations = planted.violations(RULE)

    found(violations, file=TEMPLATE, resource="Parameters.Architecture", containing="allowing exactly arm64, x86_64")
