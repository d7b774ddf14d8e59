"""The kit's metrics namespace is written once in template.yaml (`Mappings.Kit.Metrics.Namespace`):
the functions' environment, the jobs' alarms and dashboards, and the loops `clockless new job`
brings in look it up, so changing it is one edit, and the kit's default is the same name."""

from __future__ import annotations

import re
from pathlib import Path

from clockless.config import DEFAULT_METRICS_NAMESPACE
from clockless_tools.template.loader import load_yaml
from tests.conftest import PROJECT_ROOT

FRAGMENT = PROJECT_ROOT / "tools/clockless_tools/template/fragments/jobs-without-fan-out.yaml"


def namespace_literals(text: str, namespace: str) -> list[int]:
    """Line numbers where `namespace` is written as a value: a YAML scalar or a quoted JSON string."""
    written = re.compile(rf'(?::\s*|"){re.escape(namespace)}(?:"|\s*$)')
    return [number for number, line in enumerate(text.splitlines(), 1) if written.search(line.split(" #")[0])]


def _namespace(path: Path) -> str:
    mappings = load_yaml(path.read_text(encoding="utf-8"), source=path.name)["Mappings"]
    return str(mappings["Kit"]["Metrics"]["Namespace"])


def test_the_namespace_is_written_once_and_is_the_kits_default() -> None:
    text = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
    namespace = _namespace(PROJECT_ROOT / "template.yaml")

    assert namespace == DEFAULT_METRICS_NAMESPACE
    assert len(namespace_literals(text, namespace)) == 1  # Mappings.Kit.Metrics.Namespace itself
    assert namespace_literals(FRAGMENT.read_text(encoding="utf-8"), namespace) == []


def test_the_expanded_template_gives_every_reader_the_one_namespace() -> None:
    document = load_yaml((PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8"))
    namespace = str(document["Mappings"]["Kit"]["Metrics"]["Namespace"])

    variables = document["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == namespace
    alarms = [
        resource["Properties"]
        for resource in document["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm" and "TickSucceeded" in str(resource["Properties"])
    ]
    assert alarms
    assert all(f"'Namespace': '{namespace}'" in str(props) for props in alarms)


def test_a_planted_literal_namespace_is_found() -> None:
    text = (PROJECT_ROOT / "template.yaml").read_text(encoding="utf-8")
    planted = text.replace("Namespace: !FindInMap [Kit, Metrics, Namespace]", "Namespace: Clockless", 1)
    in_a_dashboard = text.replace('"${Namespace}", "TickFailed"', '"Clockless", "TickFailed"', 1)

    assert len(namespace_literals(planted, "Clockless")) == 2
    assert len(namespace_literals(in_a_dashboard, "Clockless")) == 2
    assert namespace_literals("  Layers:\n    - !Ref ClocklessLayer  # Clockless\n", "Clockless") == []
