"""Rule `import-graph`: no module of the kit or the tools uses another module's private names.

A private name (`_records`, one leading underscore) is its module's own business. Another module
that imports it (`from a import _x`), reaches it through the module (`a._x`) or calls it on an
object of that module's types (`worker._records(...)`, `_records` being defined only elsewhere)
depends on what its owner may change at will: make it public or move it to the one that uses it.
Ruff cannot say this: `PLC2701` skips a private name imported from the same top-level package,
and `SLF001` refuses every `obj._x` but `self`'s, whoever defines `_x` (a dependency's included).

The graph's circles are import-linter's: the `no-circles` contract in pyproject.toml (rule
`layering` runs it) counts every import, lazy and `TYPE_CHECKING` ones too, between the modules of
each package and between its subpackages.

Read: every package the template's layers ship (the kit, `clockless`) and every package under
tools/. An import edge goes to the module named (`from a import b` to `a.b` when that is a module,
else to `a`); ancestor packages are not edges, as Python has them in `sys.modules` first.

The same graph lists a package's modules for its docs, each before those it imports
(`package_modules`, printed by `clockless arch --modules`: docs/fan-out.md's "The code").
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from clockless_tools.architecture.project import Project, Rule, SourceFile, Violation, per_file

IMPORT_GRAPH: Final = "import-graph"

_PRIVATE_FIX: Final = "make the name public (no leading underscore) or move it into the module that uses it"
# Expressions through which a module reaches its own private names.
_OWN: Final = frozenset({"self", "cls"})


@dataclass(frozen=True, slots=True)
class _Edge:
    target: str
    line: int


@dataclass(frozen=True, slots=True)
class _Import:
    """One name an import statement reads: `from base import name` (name "" for `import base`)."""

    base: str
    name: str
    bound: str | None  # the local name it binds to, when it binds one the file can reach it by
    line: int


@dataclass(frozen=True, slots=True)
class _Reach:
    """`<expr>._name` in the file: through a name (`worker`), or `self`/`cls`/`super()` (own=True)."""

    through: str | None
    own: bool
    name: str
    line: int


@dataclass(frozen=True, slots=True)
class _Reading:
    """What one walk of a file's tree finds: its imports, the private names it defines and reaches."""

    imports: tuple[_Import, ...]
    defines: frozenset[str]
    reaches: tuple[_Reach, ...]


def check_import_graph(project: Project) -> Iterator[Violation]:
    sources = {source.module: source for source in _checked_sources(project)}
    readings = {module: _read(source)[0] for module, source in sources.items()}
    defined: dict[str, set[str]] = {}
    for module, reading in readings.items():
        for name in reading.defines:
            defined.setdefault(name, set()).add(module)
    for module, source in sources.items():
        for owners, name, line in _private_uses(module, readings[module], sources, defined):
            yield Violation(
                IMPORT_GRAPH,
                source.relative,
                module,
                f"{module} uses {' or '.join(owners)}'s private name {name}",
                _PRIVATE_FIX,
                line=line,
            )


def _checked_sources(project: Project) -> Iterator[SourceFile]:
    kit = {package for packages in project.layer_packages.values() for package in packages}
    for source in project.sources:
        if source.owner in project.layer_dirs and source.module.split(".", 1)[0] in kit:
            yield source
    yield from project.tool_sources


@dataclass(frozen=True, slots=True)
class PackageModule:
    """A module of a package, as its docs list it: what it is, and the package's modules it imports."""

    module: str
    summary: str
    imports: tuple[str, ...]


def package_modules(project: Project, package: str) -> list[PackageModule]:
    """The modules of `package` (a kit or tools package), each before the package's modules it
    imports: the entry points first, the shared keys and types last. A module's summary is the
    first sentence of its docstring. Ties go by the longest chain of imports below, then by name."""
    sources = {source.module: source for source in _checked_sources(project)}
    inside = {m: s for m, s in sources.items() if m.startswith(f"{package}.")}
    if not inside:
        raise ValueError(f"no modules under {package!r}")
    graph = {m: sorted({e.target for e in _edges(m, _read(s)[0], inside)}) for m, s in inside.items()}
    depth: dict[str, int] = {}

    def below(module: str) -> int:
        if module not in depth:
            depth[module] = 0  # a circle (the rule reports it) ends the chain here
            depth[module] = 1 + max((below(target) for target in graph[module]), default=-1)
        return depth[module]

    order = sorted(inside, key=lambda module: (-below(module), module))
    return [PackageModule(m, _first_sentence(inside[m].tree), tuple(graph[m])) for m in order]


def _first_sentence(tree: ast.Module) -> str:
    paragraph = (ast.get_docstring(tree) or "").split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    end = re.search(r"\.(\s|$)", text)
    return text if end is None else text[: end.start() + 1]


# ---------------------------------------------------------------------------------------------- reading
@per_file
def _read(source: SourceFile) -> Iterator[_Reading]:
    """One walk of the tree (remembered per tree, so a planted copy reads only the file it changed)."""
    imports: list[_Import] = []
    reaches: list[_Reach] = []
    defines = {name for name in _defined_in(source.tree) if _private(name)}
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            imports += [_Import(alias.name, "", alias.asname, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, source)
            imports += [_Import(base, alias.name, alias.asname or alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.ctx, ast.Store):
                defines.add(node.attr)
            elif not isinstance(node.ctx, ast.Del):
                through = node.value.id if isinstance(node.value, ast.Name) else None
                reaches.append(_Reach(through, _own_object(node.value), node.attr, node.lineno))
    yield _Reading(tuple(imports), frozenset(defines), tuple(reaches))


def _absolute(node: ast.ImportFrom, source: SourceFile) -> str:
    """The module a `from ... import` reads, relative imports resolved against `source`."""
    if not node.level:
        return node.module or ""
    package = source.module.split(".")
    if source.path.name != "__init__.py":
        package.pop()
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _defined_in(tree: ast.Module) -> Iterator[str]:
    """The names a module defines at its top level or in its classes' bodies."""
    bodies: list[list[ast.stmt]] = [tree.body]
    while bodies:
        for statement in bodies.pop():
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield statement.name
                if isinstance(statement, ast.ClassDef):
                    bodies.append(statement.body)
            elif isinstance(statement, ast.Assign | ast.AnnAssign):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                yield from (node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"


def _own_object(node: ast.expr) -> bool:
    """`self`, `cls` or `super()`: an object reaching its own (or its base class's) private names."""
    if isinstance(node, ast.Name):
        return node.id in _OWN
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


# ---------------------------------------------------------------------------------------------- edges
def _edges(module: str, reading: _Reading, modules: Mapping[str, SourceFile]) -> list[_Edge]:
    """Each module of `modules` that `module` imports, anywhere in its tree, with the first line."""
    first: dict[str, int] = {}
    for imported in reading.imports:
        target = _target(imported, modules)
        if target is not None and target != module:
            first[target] = min(first.get(target, imported.line), imported.line)
    return [_Edge(target, line) for target, line in first.items()]


def _target(imported: _Import, modules: Mapping[str, SourceFile]) -> str | None:
    """The module of `modules` an import loads: `base.name` when that is one, else `base` (or the
    nearest package above it)."""
    if imported.name and f"{imported.base}.{imported.name}" in modules:
        return f"{imported.base}.{imported.name}"
    name = imported.base
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


# ---------------------------------------------------------------------------------------------- private names
def _private_uses(
    module: str, reading: _Reading, modules: Mapping[str, SourceFile], defined: Mapping[str, set[str]]
) -> Iterator[tuple[list[str], str, int]]:
    """(the other modules it may belong to, private name, line) of each private name of another
    module that `module` imports, reaches through that module, or calls on one of its objects."""
    aliases: dict[str, str] = {}
    for imported in reading.imports:
        whole = f"{imported.base}.{imported.name}" if imported.name else imported.base
        if whole in modules and imported.bound is not None:
            aliases[imported.bound] = whole
        elif imported.name and _private(imported.name) and imported.base in modules:
            yield [imported.base], imported.name, imported.line
    for reach in reading.reaches:
        if reach.through in aliases:
            yield [aliases[reach.through]], reach.name, reach.line
        elif not reach.own and reach.name not in reading.defines:
            owners = sorted(defined.get(reach.name, set()) - {module})
            if owners:
                yield owners, reach.name, reach.line


IMPORT_GRAPH_RULE = Rule(
    IMPORT_GRAPH,
    "the kit and the tools: no module uses another's private names (their import circles: contract no-circles)",
    check_import_graph,
)
