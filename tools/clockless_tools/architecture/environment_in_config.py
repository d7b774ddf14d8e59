"""Rule `environment-in-config`: deployed code reads the process environment in one module,
`clockless.config`, and nowhere else.

A setting read in two places is parsed two ways: one default here, another there (the metrics
namespace had three), a variable required by one reader and optional for the next. The kit's
config module is where every variable is read, with an error that names it; the settings objects
(the kit's `KitSettings`, the fan-out's, each function's `settings.py`) call it once at first use,
and the variables the kit shares (`LEDGER_TABLE_NAME`, `LEDGER_RETENTION_DAYS`,
`POWERTOOLS_METRICS_NAMESPACE`) have one parser each there. Code that ships in no function (the
tools) is not checked; job logic reads no configuration at all (rule `layering`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from clockless_tools.architecture.code import environment_reads
from clockless_tools.architecture.project import KIT_PACKAGE, Project, Rule, Violation

ENVIRONMENT_IN_CONFIG: Final = "environment-in-config"
# The one deployed module that reads the process environment.
CONFIG_MODULE: Final = f"{KIT_PACKAGE}.config"
_FIX: Final = (
    f"read it through {CONFIG_MODULE} (env_str, env_int, env_optional, or a parser of its own there) "
    "in a settings object, and pass the value in"
)


def check_environment_in_config(project: Project) -> Iterator[Violation]:
    for source in project.sources:
        if source.module == CONFIG_MODULE:
            continue
        for line in sorted(environment_reads(source.tree)):
            yield Violation(
                ENVIRONMENT_IN_CONFIG,
                source.relative,
                source.owner,
                f"{source.module} reads the environment itself: deployed code reads it in {CONFIG_MODULE} only",
                _FIX,
                line=line,
            )


ENVIRONMENT_IN_CONFIG_RULE = Rule(
    ENVIRONMENT_IN_CONFIG,
    "deployed code reads the process environment in clockless.config only (settings objects call it)",
    check_environment_in_config,
)
