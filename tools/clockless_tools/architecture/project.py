"""What the rules look at: one project (template + code on disk) and what they report (violations).

A `Project` is a template path and a root directory, so the same rules run over the real project
and over a copy in a temporary directory with a violation planted in it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from clockless_tools.errors import ToolError
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Function, Template
from clockless_tools.template.queues import literal_int

# The kit's package, as handlers import it.
KIT_PACKAGE = "clockless"
# The developer tools' directory: never deployed, read by the rules about code layout.
TOOLS_DIR = "tools"

_SKIPPED_DIRS = {"__pycache__", "node_modules"}
_SUB_TOKEN = re.compile(r"\$\{([^}!]+)\}")


class ProjectError(ToolError, ValueError):
    """The project cannot be checked (unreadable source, missing file); the message says where."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: where it is, what is wrong and how to fix it, each in one line."""

    rule: str
    file: str
    resource: str
    message: str
    fix: str
    line: int | None = None

    @property
    def location(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "file": self.file,
            "line": self.line,
            "resource": self.resource,
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class Rule:
    """A named check over a project; `check` yields every violation, never stopping at the first."""

    name: str
    summary: str
    check: Callable[[Project], Iterable[Violation]]


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A Python file of the application (functions or layers) and the template resource it ships in."""

    path: Path
    relative: str
    module: str
    owner: str
    tree: ast.Module = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class HandlerLocation:
    module: str
    attribute: str
    path: Path | None


@dataclass(frozen=True)
class Project:
    """template.yaml and the directories its CodeUri and ContentUri name, under `root`."""

    template_path: Path
    root: Path

    @classmethod
    def at(cls, root: Path, template: str = "template.yaml") -> Project:
        return cls(template_path=root / template, root=root)

    @classmethod
    def for_template(cls, template_path: Path) -> Project:
        template_path = template_path.resolve()
        return cls(template_path=template_path, root=template_path.parent)

    @cached_property
    def template(self) -> Template:
        return Template.load(self.template_path)

    @property
    def template_file(self) -> str:
        return self.relative(self.template_path)

    @property
    def pyproject_path(self) -> Path:
        return self.root / "pyproject.toml"

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    # ------------------------------------------------------------------ template resources
    def resource_type(self, logical_id: str) -> str | None:
        resource = self.template.resources.get(logical_id)
        return str(resource.get("Type")) if isinstance(resource, Mapping) else None

    def code_dir(self, fn: Function) -> Path | None:
        """The function's CodeUri as a local directory, or None when it is not one."""
        code_uri = fn.prop("CodeUri")
        if not isinstance(code_uri, str) or not code_uri:
            return None
        return self.root / code_uri

    @cached_property
    def layer_dirs(self) -> dict[str, Path]:
        """Each local layer's ContentUri, by logical id; SAM puts its packages directly under it."""
        dirs = {}
        for logical_id, resource in self.template.resources_of_type("AWS::Serverless::LayerVersion").items():
            content_uri = (resource.get("Properties") or {}).get("ContentUri")
            if isinstance(content_uri, str) and content_uri:
                dirs[logical_id] = self.root / content_uri
        return dirs

    @cached_property
    def code_roots(self) -> dict[str, Path]:
        """Every directory Lambda puts on the import path, by the resource that ships it."""
        roots = dict(self.layer_dirs)
        for logical_id, fn in self.template.functions.items():
            code_dir = self.code_dir(fn)
            if code_dir is not None:
                roots[logical_id] = code_dir
        return roots

    def handler_location(self, fn: Function) -> HandlerLocation:
        module, _, attribute = fn.handler.rpartition(".")
        code_dir = self.code_dir(fn)
        path = None
        if module and code_dir is not None:
            base = code_dir.joinpath(*module.split("."))
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    path = candidate
                    break
        return HandlerLocation(module=module, attribute=attribute, path=path)

    @cached_property
    def function_packages(self) -> dict[str, str]:
        """The top-level package of each function's handler, by function logical id."""
        return {
            logical_id: fn.package_dir
            for logical_id, fn in self.template.functions.items()
            if "." in fn.handler and self.code_dir(fn) is not None
        }

    @cached_property
    def layer_packages(self) -> dict[str, list[str]]:
        """The packages directly under each layer's ContentUri, by layer logical id."""
        return {
            logical_id: sorted(child.name for child in layer_dir.iterdir() if (child / "__init__.py").is_file())
            for logical_id, layer_dir in self.layer_dirs.items()
            if layer_dir.is_dir()
        }

    # ------------------------------------------------------------------ code
    @cached_property
    def app_dirs(self) -> list[Path]:
        """Everything that is deployed: every CodeUri and ContentUri, and functions/ and layers/ as a whole."""
        dirs = [*self.code_roots.values(), self.root / "functions", self.root / "layers"]
        return [d for d in dirs if d.is_dir()]

    @cached_property
    def sources(self) -> list[SourceFile]:
        """Every Python file of the application, each once, parsed."""
        seen: dict[Path, SourceFile] = {}
        for app_dir in self.app_dirs:
            for path in sorted(_python_files(app_dir)):
                resolved = path.resolve()
                if resolved not in seen:
                    seen[resolved] = self._source(path)
        return list(seen.values())

    @cached_property
    def tool_sources(self) -> list[SourceFile]:
        """Every Python file of the developer tools (tools/: never deployed), each parsed and named
        as the tools import it (`clockless_tools.cli.app`), owned by `tools`."""
        tools = self.root / TOOLS_DIR
        if not tools.is_dir():
            return []
        return [
            dataclasses.replace(self._source(path), module=_module_name(path.relative_to(tools)), owner=TOOLS_DIR)
            for path in sorted(_python_files(tools))
        ]

    def source(self, path: Path) -> SourceFile:
        for candidate in self.sources:
            if candidate.path.resolve() == path.resolve():
                return candidate
        return self._source(path)

    def module_file(self, module: str) -> SourceFile | None:
        for candidate in self.sources:
            if candidate.module == module:
                return candidate
        return None

    def _source(self, path: Path) -> SourceFile:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ProjectError(f"{self.relative(path)}: cannot read: {error.strerror}") from None
        try:
            tree = _parsed(text)
        except SyntaxError as error:
            raise ProjectError(f"{self.relative(path)}:{error.lineno}: not valid Python: {error.msg}") from None
        owner, module = self._owner_and_module(path)
        return SourceFile(path=path, relative=self.relative(path), module=module, owner=owner, tree=tree)

    def _owner_and_module(self, path: Path) -> tuple[str, str]:
        resolved = path.resolve()
        # The deepest root wins, so a layer inside a function folder is never mistaken for the function.
        for owner, root in sorted(self.code_roots.items(), key=lambda item: -len(item[1].resolve().parts)):
            try:
                inside = resolved.relative_to(root.resolve())
            except ValueError:
                continue
            return owner, _module_name(inside)
        inside = Path(self.relative(path))
        return inside.parent.as_posix(), _module_name(inside)

    # ------------------------------------------------------------------ intrinsic values
    def referenced_ids(self, value: Any) -> set[str]:
        """Logical ids of this template's resources that a value references (Ref, GetAtt, Sub)."""
        return {name for name in _references(value) if name in self.template.resources}

    def ids_of_type(self, value: Any, *resource_types: str) -> set[str]:
        return {name for name in self.referenced_ids(value) if self.resource_type(name) in resource_types}

    def literal_int(self, value: Any) -> int | None:
        """An integer property, following a !Ref to a parameter's default; None if not knowable."""
        stated = literal_int(value)
        if stated is not None:
            return stated
        if isinstance(value, Mapping) and set(value) == {"Ref"}:
            parameters = self.template.document.get("Parameters") or {}
            if value["Ref"] in parameters:
                try:
                    return self.literal_int(self.template.parameter_default(str(value["Ref"])))
                except TemplateError:
                    return None
        return None


def _module_name(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _python_files(directory: Path) -> Iterator[Path]:
    for path in directory.iterdir():
        if path.is_dir():
            if path.name not in _SKIPPED_DIRS and not path.name.startswith("."):
                yield from _python_files(path)
        elif path.suffix == ".py":
            yield path


def _references(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _references(item)
        return
    if not isinstance(value, Mapping):
        return
    for key, argument in value.items():
        if key == "Ref" and isinstance(argument, str):
            yield argument
        elif key == "Fn::GetAtt":
            target = argument[0] if isinstance(argument, list) and argument else argument
            if isinstance(target, str):
                yield target.split(".", 1)[0]
        elif key == "Fn::Sub":
            text, variables = (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])
            for token in _SUB_TOKEN.findall(str(text)):
                if not token.startswith("AWS::") and token not in variables:
                    yield token.split(".", 1)[0]
            yield from _references(variables)
        else:
            yield from _references(argument)


def sub_text(value: Any) -> str | None:
    """The literal text of a resource string: a plain string, or a !Sub's text with its tokens."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and set(value) == {"Fn::Sub"}:
        argument = value["Fn::Sub"]
        return str(argument if isinstance(argument, str) else argument[0])
    return None


@functools.lru_cache(maxsize=2048)
def _parsed(text: str) -> ast.Module:
    """A file's tree, shared by every project that holds the same text: the planted copies of the
    architecture tests differ from the project in one file each. No rule writes to a tree."""
    return ast.parse(text)


def per_file[T](check: Callable[[SourceFile], Iterable[T]]) -> Callable[[SourceFile], list[T]]:
    """A reading of one file that depends on nothing but the file: remembered for the file's tree
    (shared by every copy holding the same text, `_parsed`) and its place in the project."""
    memo: dict[tuple[ast.Module, str, str, str], list[T]] = {}

    @functools.wraps(check)
    def remembered(source: SourceFile) -> list[T]:
        key = (source.tree, source.relative, source.owner, source.module)
        if key not in memo:
            memo[key] = list(check(source))
        return memo[key]

    return remembered
