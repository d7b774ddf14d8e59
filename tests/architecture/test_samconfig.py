"""Every samconfig.toml environment stands on its own.

SAM reads only the chosen environment's sections (`--config-env prod` never falls back to
[default]), so an environment that leaves out its region deploys wherever the caller's profile
points. Each one states region and stack name in `global`, and its deploy adds capabilities and
tags; a command section that repeats the stack name or region must agree with `global`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tests.architecture.planting import PlantedCopy

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {"global": ("region", "stack_name"), "deploy": ("stack_name", "region", "capabilities", "tags")}


def samconfig_problems(path: Path) -> list[str]:
    config: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    problems = []
    environments = {name: value for name, value in config.items() if isinstance(value, dict)}
    if "default" not in environments:
        problems.append("no [default] environment")
    for env, commands in environments.items():
        parameters = {command: (section or {}).get("parameters", {}) for command, section in commands.items()}
        for command, keys in REQUIRED.items():
            for key in keys:
                if not parameters.get(command, {}).get(key):
                    problems.append(f"[{env}.{command}.parameters] has no {key}")
        expected = parameters.get("global", {})
        for command, values in parameters.items():
            for key in ("region", "stack_name"):
                if key in values and expected.get(key) and values[key] != expected[key]:
                    problems.append(
                        f"[{env}.{command}.parameters] {key} {values[key]!r}, global says {expected[key]!r}"
                    )
    return problems


def test_every_environment_is_complete() -> None:
    assert samconfig_problems(PROJECT_ROOT / "samconfig.toml") == []


def test_an_environment_without_its_region_or_tags_is_caught(planted: PlantedCopy) -> None:
    copy = planted
    copy.write("samconfig.toml", (PROJECT_ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    copy.replace(
        "samconfig.toml", 'region = "us-east-1"\nstack_name = "clockless-prod"\n', 'stack_name = "clockless-prod"\n'
    )
    copy.replace("samconfig.toml", 'tags = "project=\\"clockless\\" environment=\\"prod\\""\n', "")
    copy.replace(
        "samconfig.toml",
        'stack_name = "clockless-prod"',
        'stack_name = "clockless-prd"',
        after="[prod.deploy.parameters]",
    )

    assert samconfig_problems(copy.root / "samconfig.toml") == [
        "[prod.global.parameters] has no region",
        "[prod.deploy.parameters] has no tags",
        "[prod.deploy.parameters] stack_name 'clockless-prd', global says 'clockless-prod'",
    ]
