"""Rule `layering`: Handlers sit over repositories and settings, which sit over plain logic; the
kit knows no job; no job imports another; no import circle in the kit or the tools.

Import direction is import-linter's job: its contracts live in pyproject.toml and this rule runs
them through its API over the project's own directories, so a copy with a planted violation is
checked as it is on disk. The contracts name the functions' packages as `{functions}`, which the
rule replaces with every package the template deploys from functions/ (and adds them to the root
packages): a new job is covered with no edit to pyproject.toml. What import-linter cannot see,
reading the environment, is ruff's (banned-api, TID251: pyproject.toml); and the rule fails when a
package the template deploys is missing from the contracts (a contract that lost `{functions}`),
so no job is silently unchecked.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import re
import sys
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from clockless_tools.architecture.project import TOOLS_DIR, Project, Rule, Violation

LAYERING: Final = "layering"

# The contracts the rule expects, and which packages of the template each must cover.
JOB_LAYERS: Final = "job-layers"
PLAIN_LOGIC: Final = "plain-logic"
KIT_INDEPENDENT: Final = "kit-independent-of-jobs"
JOBS_INDEPENDENT: Final = "jobs-independent"
TOOLS_LAYERS: Final = "tools-layers"
NO_CIRCLES: Final = "no-circles"
# What the contracts in pyproject.toml write for "every function's package" (see the docstring).
FUNCTIONS: Final = "{functions}"

_FIXES: Final = {
    JOB_LAYERS: "move the import up a layer: the handler wires repository and settings into the logic",
    PLAIN_LOGIC: "move AWS access into the job's repository and hand it to the logic as a Protocol",
    "logic-reads-no-environment": "read configuration in settings.py and pass the values to the logic",
    KIT_INDEPENDENT: "the kit must not know its jobs: pass what it needs in from the handler",
    JOBS_INDEPENDENT: "Lambda ships each CodeUri alone: move shared code into the layer",
    TOOLS_LAYERS: (
        "cli > simulate/operations/bench/architecture/timezones/scaffold/engine > local > template: import downwards"
    ),
    NO_CIRCLES: "move what both sides need into a module both import; a lazy import hides the circle, not breaks it",
}


def check_layering(project: Project) -> Iterator[Violation]:
    options = yield from _contract_options(project)
    if options is None:
        return
    yield from _check_coverage(project, options)
    yield from _check_contracts(project, options)


# ---------------------------------------------------------------------------------------------- contracts
@dataclass(frozen=True, slots=True)
class _Options:
    root_packages: list[str]
    contracts: Mapping[str, Mapping[str, Any]]
    user_options: Any


def _contract_options(project: Project) -> Generator[Violation, None, _Options | None]:
    """Read [tool.importlinter]; a generator so that a missing configuration is itself a violation."""
    from importlinter import api  # noqa: F401 - configures import-linter's settings on import
    from importlinter.application import use_cases

    relative = project.relative(project.pyproject_path)
    try:
        user_options = use_cases.read_user_options(str(project.pyproject_path))
    except FileNotFoundError:
        yield Violation(
            LAYERING,
            relative,
            "[tool.importlinter]",
            "no import-linter contracts: nothing checks which layer imports which",
            "add [tool.importlinter] and its contracts to pyproject.toml",
        )
        return None
    session = user_options.session_options
    packages = sorted(set(project.function_packages.values()))
    roots = [str(root) for root in session.get("root_packages") or [session.get("root_package")] if root]
    roots += [package for package in packages if package not in roots]
    session["root_packages"] = roots
    session.pop("root_package", None)
    for options in user_options.contracts_options:
        for key, value in options.items():
            if isinstance(value, list) and FUNCTIONS in value:
                at = value.index(FUNCTIONS)
                options[key] = [*value[:at], *packages, *value[at + 1 :]]
    contracts = {str(options.get("id") or options.get("name")): options for options in user_options.contracts_options}
    return _Options(root_packages=roots, contracts=contracts, user_options=user_options)


def _check_coverage(project: Project, options: _Options) -> Iterator[Violation]:
    """Every package the template deploys is inside the contracts (a function's through `{functions}`),
    or its imports go unchecked."""
    relative = project.relative(project.pyproject_path)
    functions = sorted(project.function_packages.items())
    layers = sorted((layer, package) for layer, packages in project.layer_packages.items() for package in packages)
    expected: list[tuple[str, str, str, str]] = [
        (owner, package, "root_packages", "") for owner, package in [*functions, *layers]
    ]
    for owner, package in functions:
        expected += [
            (owner, package, "containers", JOB_LAYERS),
            (owner, package, "forbidden_modules", KIT_INDEPENDENT),
            (owner, package, "modules", JOBS_INDEPENDENT),
        ]
    expected += [(owner, package, "source_modules", KIT_INDEPENDENT) for owner, package in layers]
    expected += [(owner, package, "ancestors", NO_CIRCLES) for owner, package in layers]
    for contract_id in (JOB_LAYERS, PLAIN_LOGIC, KIT_INDEPENDENT, JOBS_INDEPENDENT, TOOLS_LAYERS, NO_CIRCLES):
        if contract_id not in options.contracts:
            yield Violation(
                LAYERING,
                relative,
                f"contract {contract_id}",
                f"pyproject.toml has no import-linter contract with id {contract_id!r}",
                f"restore the {contract_id} contract under [[tool.importlinter.contracts]]",
            )
    for owner, package, option, contract_id in expected:
        if contract_id and contract_id not in options.contracts:
            continue
        listed = options.root_packages if not contract_id else _as_list(options.contracts[contract_id].get(option))
        if not any(_matches(pattern, package) for pattern in listed):
            where = f"[tool.importlinter] {option}" if not contract_id else f"contract {contract_id}'s {option}"
            yield Violation(
                LAYERING,
                relative,
                owner,
                f"{owner}'s package {package} is not in {where}: its imports are not checked",
                f"add {FUNCTIONS if owner in project.function_packages else package!r} to {where} in pyproject.toml",
            )


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [line.strip() for line in value.splitlines() if line.strip()]
    return [str(item) for item in value or []]


def _matches(pattern: str, module: str) -> bool:
    """import-linter's module expressions: `*` stands for one module name, `**` for any number."""
    regex = ".".join(
        "[^.]+" if part == "*" else ".+" if part == "**" else re.escape(part) for part in pattern.split(".")
    )
    return re.fullmatch(regex, module) is not None


def _check_contracts(project: Project, options: _Options) -> Iterator[Violation]:
    from importlinter.application import use_cases
    from importlinter.application.user_options import InvalidUserOptions
    from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
    from importlinter.contracts.forbidden import ForbiddenContract
    from importlinter.contracts.independence import IndependenceContract
    from importlinter.contracts.layers import LayersContract
    from importlinter.domain.contract import registry

    for name, contract_class in (
        ("forbidden", ForbiddenContract),
        ("layers", LayersContract),
        ("independence", IndependenceContract),
        ("acyclic_siblings", AcyclicSiblingsContract),
    ):
        registry.register(contract_class, name)
    relative = project.relative(project.pyproject_path)
    try:
        roots = [*project.code_roots.values(), project.root / TOOLS_DIR]
        with _importable_from(roots, set(options.root_packages)):
            report = use_cases.create_report(options.user_options, cache_dir=None)
    except (InvalidUserOptions, ValueError, ImportError) as error:
        yield Violation(
            LAYERING,
            relative,
            "[tool.importlinter]",
            f"import-linter cannot check the contracts: {error}",
            "fix root_packages and the contracts in pyproject.toml",
        )
        return
    for name, invalid in report.invalid_contract_options.items():
        yield Violation(
            LAYERING, relative, f"contract {name}", f"invalid contract: {invalid}", "fix the contract in pyproject.toml"
        )
    for contract, check in report.get_contracts_and_checks():
        if check.kept:
            continue
        contract_id = str(contract.contract_options.get("id") or contract.name)
        circles = check.metadata.get("cycle_breakers_by_package")
        if circles:
            for package, breakers in sorted(circles.items()):
                for importer, imported in sorted(breakers):
                    yield _circle_violation(project, contract_id, package, importer, imported)
            continue
        chains = list(_chains(check.metadata))
        if not chains:
            yield Violation(
                LAYERING, relative, f"contract {contract_id}", f"{contract.name}: broken", _fix(contract_id)
            )
        for chain in chains:
            yield _chain_violation(project, contract_id, contract.name, chain)


@contextlib.contextmanager
def _importable_from(roots: list[Path], packages: set[str]) -> Iterator[None]:
    """Let import-linter find `packages` under `roots` (it locates them with importlib), then restore.

    Modules already imported under those names are set aside meanwhile, so a copy of the project
    is read from its own directory and not from the copy imported first.
    """
    saved_path = list(sys.path)
    set_aside = {name: module for name, module in sys.modules.items() if name.split(".", 1)[0] in packages}
    for name in set_aside:
        del sys.modules[name]
    sys.path[:0] = [str(root) for root in roots]
    importlib.invalidate_caches()
    try:
        # import-linter draws progress on the terminal; the rule reports through violations instead.
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        sys.path[:] = saved_path
        for name in [name for name in sys.modules if name.split(".", 1)[0] in packages]:
            del sys.modules[name]
        sys.modules.update(set_aside)
        importlib.invalidate_caches()


def _chains(metadata: Mapping[str, Any]) -> Iterator[list[Mapping[str, Any]]]:
    """The import chains a broken contract reports, whatever its type's metadata shape."""
    for invalid in metadata.get("invalid_chains") or []:
        for chain in invalid.get("chains") or []:
            yield list(chain["chain"]) if isinstance(chain, Mapping) else list(chain)
    for dependency in metadata.get("invalid_dependencies") or []:
        for route in dependency.get("routes") or []:
            yield list(route.get("chain") or [])


def _chain_violation(
    project: Project, contract_id: str, contract_name: str, chain: list[Mapping[str, Any]]
) -> Violation:
    first = chain[0]
    importer = str(first["importer"])
    source = project.module_file(importer)
    steps = [importer] + [f"{link['imported']} (line {_first_line(link)})" for link in chain]
    return Violation(
        LAYERING,
        source.relative if source is not None else _tools_file(project, importer),
        source.owner if source is not None else importer,
        f"{contract_name}: {' -> '.join(steps)}",
        _fix(contract_id),
        line=_first_line(first),
    )


def _circle_violation(project: Project, contract_id: str, package: str, importer: str, imported: str) -> Violation:
    """One import import-linter would remove to break the circles among `package`'s children."""
    source = project.module_file(importer)
    relative = source.relative if source is not None else _tools_file(project, importer)
    line = _import_line(project.root / relative, importer, imported)
    at = "" if line is None else f" (line {line})"
    return Violation(
        LAYERING,
        relative,
        source.owner if source is not None else importer,
        f"import circle among {package}'s modules: {importer} imports {imported}{at}, which imports it back",
        _fix(contract_id),
        line=line,
    )


def _import_line(path: Path, importer: str, imported: str) -> int | None:
    """The first line of `importer`'s file that imports `imported` (or a name from it), wherever
    the statement stands (a function's body, `if TYPE_CHECKING:`), relative imports resolved."""
    if path.suffix != ".py" or not path.is_file():
        return None
    package = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
    lines: list[int] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join([*parts, *([node.module] if node.module else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            target == imported or target.startswith(f"{imported}.") for target in targets
        ):
            lines.append(node.lineno)
    return min(lines, default=None)


def _tools_file(project: Project, module: str) -> str:
    """Where a module of the tools lives, or pyproject.toml when it is no file of the project."""
    base = project.root.joinpath(TOOLS_DIR, *module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return project.relative(candidate)
    return project.relative(project.pyproject_path)


def _first_line(link: Mapping[str, Any]) -> int | None:
    lines = [line for line in link.get("line_numbers") or () if isinstance(line, int) and line > 0]
    return min(lines) if lines else None


def _fix(contract_id: str) -> str:
    return _FIXES.get(contract_id, f"see the {contract_id} contract in pyproject.toml")


LAYERING_RULE = Rule(
    LAYERING,
    "handler > repository/settings > logic; logic imports no boto3/botocore/pynamodb nor clockless.config; "
    "layers import no function; tools: cli > features > local > template; no import circle",
    check_layering,
)
