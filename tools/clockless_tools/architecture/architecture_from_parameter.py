"""Rule architecture-from-parameter: the stack's instruction set is one choice, the `Architecture`
parameter, and no function or layer fixes its own.

Deployed, the functions run on arm64; `sam local` on an x86_64 machine runs them natively with
`--parameter-overrides Architecture=x86_64` (docs/running-locally.md). That works only while every
function takes its architecture from Globals, which takes it from the parameter, and the layer is
built and declared for the same one: a function that writes `Architectures: [arm64]` would run
under emulation (or not start) locally, and a layer compatible with one architecture only would
not attach to a function built for the other. SAM builds a layer for x86_64 when its Metadata
names no BuildArchitecture, so that is fixing it too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from clockless_tools.architecture.project import Project, Rule, Violation

ARCHITECTURE_FROM_PARAMETER: Final = "architecture-from-parameter"
PARAMETER: Final = "Architecture"
CHOICES: Final = ("arm64", "x86_64")
_FROM_PARAMETER: Final = {"Ref": PARAMETER}
_FUNCTION_TYPES: Final = ("AWS::Serverless::Function", "AWS::Lambda::Function")
_LAYER_TYPES: Final = ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion")


def check_architecture_from_parameter(project: Project) -> Iterator[Violation]:
    yield from _parameter(project)
    template = project.template
    architectures = template.function_globals.get("Architectures")
    if architectures != [_FROM_PARAMETER]:
        yield _violation(
            project,
            "Globals.Function",
            f"Architectures is {architectures!r}, not the {PARAMETER} parameter: the functions' architecture is fixed",
            f"Architectures: [!Ref {PARAMETER}] in Globals.Function",
        )
    for resource_type in _FUNCTION_TYPES:
        for logical_id, resource in template.resources_of_type(resource_type).items():
            own = (resource.get("Properties") or {}).get("Architectures")
            if own is not None:
                yield _violation(
                    project,
                    logical_id,
                    f"sets its own Architectures {own!r}: it would not follow --parameter-overrides {PARAMETER}=...",
                    "remove Architectures from the function: it comes from Globals",
                )
    for resource_type in _LAYER_TYPES:
        for logical_id, resource in template.resources_of_type(resource_type).items():
            yield from _layer(project, logical_id, resource)


def _parameter(project: Project) -> Iterator[Violation]:
    parameter = (project.template.document.get("Parameters") or {}).get(PARAMETER)
    allowed = (parameter or {}).get("AllowedValues") if isinstance(parameter, Mapping) else None
    if not isinstance(allowed, list) or sorted(allowed) != sorted(CHOICES):
        yield _violation(
            project,
            f"Parameters.{PARAMETER}",
            f"no {PARAMETER} parameter allowing exactly {', '.join(CHOICES)} (found {parameter!r})",
            f"declare {PARAMETER}: Type String, Default arm64, AllowedValues [{', '.join(CHOICES)}]",
        )


def _layer(project: Project, logical_id: str, resource: Mapping[str, Any]) -> Iterator[Violation]:
    compatible = (resource.get("Properties") or {}).get("CompatibleArchitectures")
    if compatible != [_FROM_PARAMETER]:
        yield _violation(
            project,
            logical_id,
            f"CompatibleArchitectures is {compatible!r}: "
            "the layer would not attach to functions of the other architecture",
            f"CompatibleArchitectures: [!Ref {PARAMETER}]",
        )
    metadata = resource.get("Metadata") or {}
    if "BuildMethod" in metadata and metadata.get("BuildArchitecture") != _FROM_PARAMETER:
        yield _violation(
            project,
            logical_id,
            f"Metadata.BuildArchitecture is {metadata.get('BuildArchitecture')!r} "
            "(SAM builds for x86_64 when it is missing): the layer's build is fixed",
            f"BuildArchitecture: !Ref {PARAMETER} in the layer's Metadata",
        )


def _violation(project: Project, resource: str, message: str, fix: str) -> Violation:
    return Violation(ARCHITECTURE_FROM_PARAMETER, project.template_file, resource, message, fix)


ARCHITECTURE_FROM_PARAMETER_RULE = Rule(
    ARCHITECTURE_FROM_PARAMETER,
    "every function's and layer's architecture is the Architecture parameter (Globals), none fixes its own",
    check_architecture_from_parameter,
)
