"""The packages installed editable into the dev venv, found rather than listed (pyproject.toml says
the rest). Each is installed under the name Lambda imports it by, from where it lives: the layer's kit
(layers/clockless/clockless), every function's package (functions/<package>/<package>, its CodeUri's
package) and the developer tools (tools/clockless_tools). A new job's package is picked up by
`make setup` with no edit here or in pyproject.toml (docs/decisions.md, "Packages found, not listed").
"""

from pathlib import Path

from setuptools import setup

# A function's CodeUri is functions/<package>/, holding the package of that name (and nothing else
# installed: a folder beside it, its tests say, is not a top-level package of the project).
FUNCTIONS = [code_uri / code_uri.name for code_uri in sorted(Path("functions").iterdir())]
KIT_AND_TOOLS = [path for root in (Path("layers/clockless"), Path("tools")) for path in sorted(root.iterdir())]

PACKAGE_DIR = {
    package.name: package.as_posix()
    for package in [*KIT_AND_TOOLS, *FUNCTIONS]
    if package.is_dir() and (package / "__init__.py").is_file()
}

setup(packages=sorted(PACKAGE_DIR), package_dir=PACKAGE_DIR)
