"""What `clockless new job` writes into `functions/<package>/<package>/`: a working skeleton of a job
that applies every item due by its tick's scheduled time, once (the item leaves a sparse index
when applied). A module per file written, named after it (`partition_work.py` is what a fanned-out
job's repository adds). The names are placeholders (`__JOB__`, `__PACKAGE__`, `__STEM__`, `__ENV__`)
that `JobNames.fill` spells; the user renames the item and writes the domain."""

from __future__ import annotations

from typing import Final

from clockless_tools.scaffold.package.demo import DEMO
from clockless_tools.scaffold.package.handler import handler
from clockless_tools.scaffold.package.logic import LOGIC
from clockless_tools.scaffold.package.repository import repository
from clockless_tools.scaffold.package.settings import SETTINGS
from clockless_tools.scaffold.package.worker import WORKER

INIT: Final = '''"""The __JOB__ job (made by `clockless new job`)."""
'''


def package_files(*, fan_out: bool) -> dict[str, str]:
    """File name (in the package) -> text with placeholders."""
    files = {
        "__init__.py": INIT,
        "logic.py": LOGIC,
        "settings.py": SETTINGS,
        "repository.py": repository(fan_out=fan_out),
        "handler.py": handler(fan_out=fan_out),
        "demo.py": DEMO,
    }
    if fan_out:
        files["worker.py"] = WORKER
    return files
