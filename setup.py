"""The packages installed editable into the dev venv, found rather than listed (pyproject.toml says
the rest). Each is installed under the name Lambda imports it by, from where it lives: the layer's kit
(layers/clockless/clockless), every function's package (functions/<dir>/<package>, its CodeUri's
package) and the developer tools (tools/clockless_tools). A new job's package is picked up by
`make setup` with no edit here or in pyproject.toml (docs/decisions.md, "Packages found, not listed").
"""

from pathlib import Path

from setuptools import setup

ROOTS = (Path("layers/clockless"), *sorted(Path("functions").glob("*/")), Path("tools"))

PACKAGE_DIR = {
    package.name: package.as_posix()
    for root in ROOTS
    for package in sorted(root.iterdir())
    if package.is_dir() and (package / "__init__.py").is_file()
}

setup(packages=sorted(PACKAGE_DIR), package_dir=PACKAGE_DIR)
