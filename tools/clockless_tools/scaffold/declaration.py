"""A fanned-out job's declaration in template.yaml (docs/adding-a-job.md, "The declaration"), and
its functions' entries in events/env.local.json.

Each part goes where the template's structure puts it, found by what is there rather than by line
numbers: after the last `<Id>ScheduleState` parameter, at the end of `Mappings: Jobs:`, into both
`Fn::ForEach` job lists, before the external trigger's section (the tables policy), after the last
`*_TABLE_NAME` in `Globals`, into the trigger's `JOB_FUNCTIONS` and `DeliverTicks`. The result must
load and expand with the new job's resources in it, or nothing is written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final

from clockless_tools.scaffold.names import JobNames
from clockless_tools.scaffold.wiring import WiringError
from clockless_tools.template.loader import TemplateError, load_yaml
from clockless_tools.template.model import Template

SCHEDULE_STATE: Final = """  __STEM__ScheduleState:
    Type: String
    Description: >-
      DISABLED deploys __JOB__ paused (its schedule off); `clockless pause`/`resume` change
      it on a running stack without a deploy.
    Default: ENABLED
    AllowedValues: [ENABLED, DISABLED]
"""

# Daily at 03:00 UTC with window-generation's proven dead-man numbers for a daily job (the
# dead-man-alarm rule checks them against the schedule and grace; change them together).
DECLARATION: Final = """    __STEM__:
      Name: __JOB__
      CodeUri: functions/__PACKAGE__/
      Package: __PACKAGE__
      Description: Daily; applies every item due by the tick (made by `clockless new job`).
      WorkerDescription: Applies a __JOB__ tick's partitions, one due item per transaction.
      Schedule: cron(0 3 * * ? *)
      ScheduleDescription: __JOB__, once a day at 03:00 UTC.
      SchedulerRetries: 10
      SchedulerMaxEventAgeSeconds: 3600
      LambdaMaxEventAgeSeconds: 3600
      # 2 days: longer than the whole retry window (scheduler 3600 s + Lambda async 3600 s).
      IdempotencyExpirySeconds: "172800"
      LocalTimeRule: none
      # 59 s precision + 3600 s scheduler + 3600 s Lambda retries + 120 s Timeout + 285 s fan-out
      # = 7664 s fit in the grace (rule dead-man-alarm).
      GraceMinutes: 130
      ExpectedDurationSeconds: 60
      DeadManPeriodSeconds: 3600
      DeadManPeriods: 27
      DeadManDescription: >-
        No scheduled __JOB__ tick succeeded for 27 h (its 24 h gap plus 130 min grace).
      Tables: [__STEM__Table]
"""

TABLES_POLICY: Final = """  __STEM__TablesPolicy:
    Type: AWS::IAM::ManagedPolicy
    Properties:
      Description: What __JOB__'s worker does to its tables.
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Sid: ReadDueItems
            Effect: Allow
            Action: [dynamodb:Query]
            Resource: !Sub "${__STEM__Table.Arn}/index/due-by-time"
          - Sid: ApplyDueItems
            Effect: Allow
            Action: [dynamodb:UpdateItem]
            Resource: !GetAtt __STEM__Table.Arn

"""

_TRIGGER_SECTION: Final = "  # ---------------------------------------------------------------- external trigger"


def declare(text: str, names: JobNames) -> str:
    """template.yaml with the job declared; raises WiringError naming the part that found no place."""
    text = _after_last(
        text, r"^  \w+ScheduleState:\n(?:    .*\n)+", names.fill(SCHEDULE_STATE), "ScheduleState parameter"
    )
    text = _before(text, "\nConditions:\n", names.fill(DECLARATION), "the end of Mappings: Jobs:")
    lists = re.findall(r"^    - \[(\w+(?:, \w+)*)\]$", text, flags=re.M)
    if len(lists) != 2:
        raise WiringError("template.yaml: expected the two Fn::ForEach job lists (Resources' and Outputs')")
    text = re.sub(r"^(    - \[\w+(?:, \w+)*)\]$", rf"\1, {names.stem}]", text, flags=re.M)
    text = _before(text, _TRIGGER_SECTION, names.fill(TABLES_POLICY), "the external trigger's section")
    text = _after_last(
        text, r"^        [A-Z0-9_]+_TABLE_NAME: !Ref \w+\n", f"        {names.env}_TABLE_NAME: !Ref {names.table_id}\n",
        "a table name in Globals",
    )  # fmt: skip
    text = _sub_once(
        text,
        r'("\$\{\w+Function\.Arn\}")\}\n(          TRIGGER_SECRET_ID)',
        rf'\1,\n            "{names.job}": "${{{names.function_id}.Arn}}"}}\n\2',
        "JOB_FUNCTIONS",
    )
    text = _sub_once(
        text,
        r"(            - Sid: DeliverTicks\n(?:              .*\n)+?"
        r"              Resource:\n(?:                - .*\n)+)",
        rf"\1                - !GetAtt {names.function_id}.Arn\n",
        "DeliverTicks",
    )
    text = _add_widgets(text, names)
    _check(text, names)
    return text


# The job's "succeeded ticks" widget, for its daily schedule (one tick per 1 d period), below the rest.
_TICKS_WIDGET: Final = """          {"type": "metric", "x": 0, "y": 30, "width": 12, "height": 6, "properties": {
            "title": "__JOB__: succeeded ticks per period (1 d)", "region": "${AWS::Region}",
            "stat": "Sum", "period": 86400, "view": "timeSeries",
            "metrics": [["Clockless", "TickSucceeded", "job", "__JOB__", "service", "__JOB__", "trigger", "schedule"]],
            "annotations": {"horizontal": [{"label": "one tick per period", "value": 1}]}}},
"""


def _add_widgets(text: str, names: JobNames) -> str:
    """OperationsDashboard with the job in every per-job metric list (each line the last declared job
    has there, written again for this one) and its own succeeded-ticks widget."""
    start = text.find("      DashboardBody: !Sub |\n")
    end = text.find("\n        ]}\n", start)
    if start < 0 or end < 0:
        raise WiringError("template.yaml: no OperationsDashboard body to add the job's widgets to")
    lists = re.findall(r"^    - \[(\w+(?:, \w+)*)\]$", text, flags=re.M)
    previous_stem = lists[0].split(", ")[-2]  # the job declared last before this one
    previous_job = load_yaml(text)["Mappings"]["Jobs"][previous_stem]["Name"]
    lines = text[start:end].split("\n")
    out: list[str] = []
    ticks_widget_end = None
    for line in lines:
        out.append(line)
        names_previous = f'"{previous_job}"' in line or "${" + previous_stem in line
        if names_previous and '"TickSucceeded"' in line and line.lstrip().startswith('"metrics"'):
            ticks_widget_end = len(out) + 1  # after its annotations line
            continue
        if not names_previous or not line.lstrip().startswith('["'):
            continue
        entry_end = line.index('"]') + 2
        entry, rest = line[:entry_end], line[entry_end:]
        clone = entry.replace(f'"{previous_job}"', f'"{names.job}"').replace("${" + previous_stem, "${" + names.stem)
        if rest.strip() == ",":
            out.append(clone + ",")
        else:
            out[-1] = entry + ","
            out.append(clone + rest)

    if ticks_widget_end is None:
        raise WiringError(f"template.yaml: no succeeded-ticks widget of {previous_job} to add the job's beside")
    out.insert(ticks_widget_end, names.fill(_TICKS_WIDGET).rstrip("\n"))
    return text[:start] + "\n".join(out) + text[end:]


def env_local(text: str, names: JobNames) -> str:
    """events/env.local.json with the job's table name and its functions' queue URLs."""
    document = json.loads(text)
    docker = "http://host.docker.internal:8765"
    queue = f"{docker}/123456789012/{names.stem}WorkQueue"
    document["Parameters"][f"{names.env}_TABLE_NAME"] = names.table_id
    document[names.function_id] = {"AWS_ENDPOINT_URL_SQS": docker, "WORK_QUEUE_URL": queue}
    document[f"{names.stem}WorkerFunction"] = {
        "AWS_ENDPOINT_URL_SQS": docker,
        "WORK_QUEUE_URL": queue,
        "WORK_DEAD_LETTER_QUEUE_URL": f"{docker}/123456789012/{names.stem}WorkDeadLetterQueue",
    }
    return json.dumps(document, indent=2) + "\n"


def _after_last(text: str, pattern: str, addition: str, what: str) -> str:
    matches = list(re.finditer(pattern, text, flags=re.M))
    if not matches:
        raise WiringError(f"template.yaml: no {what} to add {addition.split(':', 1)[0].strip()} after")
    at = matches[-1].end()
    return text[:at] + addition + text[at:]


def _before(text: str, anchor: str, addition: str, what: str) -> str:
    if text.count(anchor) != 1:
        raise WiringError(f"template.yaml: cannot find {what} (one {anchor.strip()!r}) to add to")
    at = text.index(anchor) + (1 if anchor.startswith("\n") else 0)
    return text[:at] + addition + text[at:]


def _sub_once(text: str, pattern: str, replacement: str, what: str) -> str:
    edited, count = re.subn(pattern, replacement, text, count=1, flags=re.M)
    if count != 1:
        raise WiringError(f"template.yaml: cannot find the trigger's {what} to add the job to")
    return edited


def _check(text: str, names: JobNames) -> None:
    try:
        template = Template(path=Path("template.yaml"), document=load_yaml(text))
        template.resources  # noqa: B018 - expanding the loops is the check
    except TemplateError as error:
        raise WiringError(f"template.yaml would not load with {names.job} declared: {error}") from None
    missing = [i for i in (names.function_id, f"{names.stem}WorkerFunction") if i not in template.resources]
    if missing or names.job not in template.jobs:
        raise WiringError(f"template.yaml: declaring {names.job} did not write out {', '.join(missing) or 'its job'}")
