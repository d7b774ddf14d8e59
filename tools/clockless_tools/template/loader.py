"""Reading template.yaml: YAML with CloudFormation's short-form intrinsics (`!Ref`, `!Sub`...) kept as
their long forms, and `AWS::LanguageExtensions` (`Fn::ForEach`, `Fn::FindInMap`...) expanded as
CloudFormation expands it (extensions.py), so every tool reads the resources that are deployed."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path
from typing import Any

import yaml

from clockless_tools.template.errors import TemplateError
from clockless_tools.template.extensions import expand

# TemplateError lives in errors.py (extensions.py raises it too); the tools import it from here.
__all__ = ["DEFAULT_TEMPLATE", "PROJECT_ROOT", "TemplateError", "load_yaml"]

PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_TEMPLATE = PROJECT_ROOT / "template.yaml"

_SHORT_FORMS = {
    "Ref": "Ref",
    "Condition": "Condition",
    "GetAtt": "Fn::GetAtt",
}


# libyaml's parser where PyYAML was built with it (its wheels are): the same documents and errors,
# about 8x faster, and templates are read by every rule, tool and planted test.
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_SafeLoader):  # type: ignore[misc]
    """YAML loader that turns CloudFormation short forms (!Ref, !Sub, ...) into their long forms."""


def _construct_intrinsic(loader: _CfnLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = _SHORT_FORMS.get(tag_suffix, f"Fn::{tag_suffix}")
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if name == "Fn::GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_intrinsic)


def load_yaml(text: str, *, source: str = "template.yaml") -> dict[str, Any]:
    """The expanded document; a fresh copy each time (callers edit it), read once per text."""
    document: dict[str, Any] = pickle.loads(_expanded(text, source))  # noqa: S301 - pickled by this process
    return document


@functools.lru_cache(maxsize=256)
def _expanded(text: str, source: str) -> bytes:
    # Kept pickled: a copy is a C-speed unpickle, where reading and expanding the YAML again is
    # most of what a tool or a planted test spends on the template.
    try:
        document = yaml.load(text, Loader=_CfnLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        raise TemplateError(f"{source}: not valid YAML: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise TemplateError(f"{source}: has no Resources mapping")
    return pickle.dumps(expand(document, source=source), protocol=pickle.HIGHEST_PROTOCOL)
