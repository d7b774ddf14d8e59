"""The `AWS::LanguageExtensions` transform, applied the way CloudFormation documents it, so every tool
reads the template CloudFormation deploys: one resource per job, with the logical ids and properties
it would have if it were written out.

What is expanded (AWS CloudFormation Template Reference):
- `Fn::ForEach::<Loop>: [Identifier, Collection, {OutputKey: OutputValue}]` in `Conditions`,
  `Outputs`, `Resources` and resource properties, nested (at most 5 deep). Each item of the
  collection (a list, or an intrinsic that returns one: `Ref` to a `CommaDelimitedList` parameter's
  default, `Fn::FindInMap`) is put in place of `${Identifier}` (as is) and `&{Identifier}` (its
  non-alphanumeric characters removed) in every key and string of the fragment, and of
  `{"Ref": Identifier}`; a generated key that already exists is an error
  (intrinsic-function-reference-foreach.html).
- `Fn::FindInMap: [Map, TopKey, SecondKey, {DefaultValue: v}]` with keys that are, or resolve to,
  literal strings; the default when the keys are not in the map, an error when they are not and
  there is none (intrinsic-function-reference-findinmap-enhancements.html).
- `Fn::Length` of a literal list (intrinsic-function-reference-length.html) and `Fn::ToJsonString` of
  a value without other intrinsics (intrinsic-function-reference-tojsonstring.html).
- `Ref` and `Fn::GetAtt` whose arguments are intrinsics that resolve to literals (the transform page:
  "you can use intrinsic functions as a parameter to Ref and Fn::GetAtt").

Then one normalisation that changes no meaning: an `Fn::Sub` whose variables are now literal strings
has them written into its text, and an `Fn::Sub` left without `${...}` is its text. So
`!Sub ["/aws/lambda/${AWS::StackName}/${Name}", {Name: window-generation}]` reads as
`!Sub "/aws/lambda/${AWS::StackName}/window-generation"`, as a resource written out by hand would.
Intrinsics that depend on the deployment (`Ref` to a parameter or resource, `GetAtt`) stay as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from clockless_tools.template.errors import TemplateError

TRANSFORM: Final = "AWS::LanguageExtensions"
FOREACH_PREFIX: Final = "Fn::ForEach::"
# CloudFormation's limit on nested Fn::ForEach loops.
MAX_DEPTH: Final = 5

_NON_ALPHANUMERIC: Final = re.compile(r"[^A-Za-z0-9]")
_SUB_VARIABLE: Final = re.compile(r"\$\{([^}!]+)\}")


def uses_extensions(document: Mapping[str, Any]) -> bool:
    transform = document.get("Transform")
    names = transform if isinstance(transform, list) else [transform]
    return TRANSFORM in names


def expand(document: Mapping[str, Any], *, source: str = "template.yaml") -> dict[str, Any]:
    """The template as CloudFormation has it after `AWS::LanguageExtensions`: loops written out,
    maps looked up. A template without the transform is returned unchanged (a copy)."""
    expanded = dict(document)
    if not uses_extensions(document):
        return expanded
    expander = _Expander(document, source)
    for section in ("Conditions", "Resources", "Outputs"):
        if isinstance(document.get(section), Mapping):
            body = expander.section(document[section], path=section)
            expanded[section] = {key: expander.resolve(value) for key, value in body.items()}
    # SAM's Globals hold no loop, but may look a value up like any property.
    if isinstance(document.get("Globals"), Mapping):
        expanded["Globals"] = expander.resolve(document["Globals"])
    return expanded


class _Expander:
    def __init__(self, document: Mapping[str, Any], source: str) -> None:
        self.mappings: Mapping[str, Any] = document.get("Mappings") or {}
        self.parameters: Mapping[str, Any] = document.get("Parameters") or {}
        self.source = source

    def error(self, path: str, message: str) -> TemplateError:
        return TemplateError(f"{self.source}: {path}: {message}")

    # ------------------------------------------------------------------ Fn::ForEach
    def section(self, node: Mapping[str, Any], *, path: str, depth: int = 0) -> dict[str, Any]:
        """Expand the loops among `node`'s keys, and inside every value (resource properties)."""
        result: dict[str, Any] = {}
        for key, value in node.items():
            if isinstance(key, str) and key.startswith(FOREACH_PREFIX):
                generated = self.loop(key, value, path=f"{path}.{key}", depth=depth + 1)
                self._merge(result, generated, path=f"{path}.{key}")
            else:
                self._merge(result, {key: self.inside(value, path=f"{path}.{key}", depth=depth)}, path=path)
        return result

    def inside(self, value: Any, *, path: str, depth: int) -> Any:
        if isinstance(value, Mapping):
            return self.section(value, path=path, depth=depth)
        if isinstance(value, list):
            return [self.inside(item, path=f"{path}[{index}]", depth=depth) for index, item in enumerate(value)]
        return value

    def loop(self, key: str, value: Any, *, path: str, depth: int) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            raise self.error(path, f"Fn::ForEach nested {depth} deep; CloudFormation allows {MAX_DEPTH}")
        if not (isinstance(value, list) and len(value) == 3):
            raise self.error(path, "Fn::ForEach takes [Identifier, Collection, {OutputKey: OutputValue}]")
        identifier, collection, fragment = value
        if not isinstance(identifier, str) or not identifier:
            raise self.error(path, f"the loop's identifier must be a non-empty string, not {identifier!r}")
        if identifier in self.parameters:
            raise self.error(path, f"the loop's identifier {identifier!r} is also a parameter's name")
        if not isinstance(fragment, Mapping):
            raise self.error(path, "the loop's fragment must be a mapping {OutputKey: OutputValue}")
        items = self.collection(collection, path=path)
        result: dict[str, Any] = {}
        for item in items:
            written = substitute(fragment, identifier, item)
            self._merge(result, self.section(written, path=path, depth=depth), path=path)
        return result

    def collection(self, collection: Any, *, path: str) -> list[str]:
        items = self.resolve(collection)
        if _is_list_parameter_ref(items, self.parameters):
            # A loop over a list parameter is expanded with its default, as `sam build` does locally.
            default = self.parameters[items["Ref"]].get("Default")
            if default is None:
                raise self.error(path, f"the collection is parameter {items['Ref']}, which has no Default")
            items = [part.strip() for part in str(default).split(",")] if isinstance(default, str) else default
        if not isinstance(items, list) or not all(isinstance(item, (str, int, float, bool)) for item in items):
            raise self.error(path, f"the collection must be a list of strings, or resolve to one; got {collection!r}")
        return [_as_string(item) for item in items]

    def _merge(self, result: dict[str, Any], generated: Mapping[str, Any], *, path: str) -> None:
        clashes = sorted(str(key) for key in generated if key in result)
        if clashes:
            raise self.error(path, f"Fn::ForEach generates keys that already exist: {', '.join(clashes)}")
        result.update(generated)

    # ------------------------------------------------------------------ the other functions
    def resolve(self, value: Any) -> Any:
        """Resolve what the transform resolves, bottom up; leave the rest to the deployment."""
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, Mapping):
            return value
        resolved = {key: self.resolve(item) for key, item in value.items()}
        if len(resolved) != 1:
            return resolved
        ((name, argument),) = resolved.items()
        if name == "Fn::FindInMap":
            return self.find_in_map(argument, original=value)
        simplify = _SIMPLIFIERS.get(name)
        return resolved if simplify is None else simplify(argument, resolved)

    def find_in_map(self, argument: Any, *, original: Any) -> Any:
        if not isinstance(argument, list) or len(argument) not in (3, 4):
            raise TemplateError(
                f"{self.source}: Fn::FindInMap takes [Map, TopKey, SecondKey(, DefaultValue)]: {original!r}"
            )
        keys = argument[:3]
        default: Any = None
        has_default = False
        if len(argument) == 4:
            option = argument[3]
            if not (isinstance(option, Mapping) and set(option) == {"DefaultValue"}):
                raise TemplateError(
                    f"{self.source}: Fn::FindInMap's fourth item must be {{DefaultValue: ...}}: {original!r}"
                )
            default, has_default = option["DefaultValue"], True
        if not all(isinstance(key, (str, int)) for key in keys):
            return {"Fn::FindInMap": argument}  # a key depends on the deployment: CloudFormation looks it up
        name, top, second = (str(key) for key in keys)
        table = self.mappings.get(name)
        entry = table.get(top) if isinstance(table, Mapping) else None
        if isinstance(entry, Mapping) and second in entry:
            return entry[second]
        if has_default:
            return default
        raise TemplateError(
            f"{self.source}: Fn::FindInMap [{name}, {top}, {second}]: "
            + ("no such map" if table is None else f"map {name} has no {top}.{second}")
            + " and no DefaultValue"
        )


def substitute(value: Any, identifier: str, item: str) -> Any:
    """`${identifier}` -> item, `&{identifier}` -> item without non-alphanumerics, `{"Ref": identifier}` -> item,
    in keys and values (intrinsic-function-reference-foreach.html, "Identifier" and "OutputKey")."""
    if isinstance(value, str):
        return value.replace(f"${{{identifier}}}", item).replace(f"&{{{identifier}}}", _NON_ALPHANUMERIC.sub("", item))
    if isinstance(value, list):
        return [substitute(element, identifier, item) for element in value]
    if isinstance(value, Mapping):
        if len(value) == 1 and value.get("Ref") == identifier:
            return item
        return {
            substitute(key, identifier, item): substitute(element, identifier, item) for key, element in value.items()
        }
    return value


def _length(argument: Any, original: Any) -> Any:
    return len(argument) if isinstance(argument, list) else original


def _to_json_string(argument: Any, original: Any) -> Any:
    return original if _has_intrinsic(argument) else json.dumps(argument, separators=(",", ":"), ensure_ascii=False)


def _normalise_sub(argument: Any, original: Any = None) -> Any:
    if isinstance(argument, list) and len(argument) == 2 and isinstance(argument[1], Mapping):
        text, variables = argument
        if not isinstance(text, str):
            return {"Fn::Sub": argument}
        literal = {
            name: _as_string(value)
            for name, value in variables.items()
            if isinstance(value, (str, int, float, bool)) and "${" not in _as_string(value)
        }
        text = _SUB_VARIABLE.sub(lambda m: literal.get(m.group(1), m.group(0)), text)
        rest = {name: value for name, value in variables.items() if name not in literal}
        argument = [text, rest] if rest else text
    if isinstance(argument, str) and "${" not in argument:
        return argument
    return {"Fn::Sub": argument}


def _is_list_parameter_ref(value: Any, parameters: Mapping[str, Any]) -> bool:
    if not (isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("Ref"), str)):
        return False
    parameter = parameters.get(value["Ref"])
    return isinstance(parameter, Mapping) and (
        parameter.get("Type") == "CommaDelimitedList" or str(parameter.get("Type", "")).startswith("List<")
    )


def _has_intrinsic(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_intrinsic(item) for item in value)
    if isinstance(value, Mapping):
        if (len(value) == 1 and next(iter(value)) in ("Ref", "Condition")) or any(
            isinstance(key, str) and key.startswith("Fn::") for key in value
        ):
            return True
        return any(_has_intrinsic(item) for item in value.values())
    return False


def _as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# What the transform computes once its arguments are literal; the rest is the deployment's.
_SIMPLIFIERS: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "Fn::Length": _length,
    "Fn::ToJsonString": _to_json_string,
    "Fn::Sub": _normalise_sub,
}
