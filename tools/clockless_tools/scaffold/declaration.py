"""A job's declaration in template.yaml (docs/adding-a-job.md, "The declaration"), and its
functions' entries in events/env.local.json.

Each part goes where the template's structure puts it, found by what is there rather than by line
numbers: after the last `<Id>ScheduleState` parameter, at the end of `Mappings: Jobs:`, into its
loops' job lists (a fanned-out job: `Fn::ForEach::Jobs` and `JobOutputs`; one that is not:
`Fn::ForEach::JobsWithoutFanOut` and `JobsWithoutFanOutOutputs`, which the first such job brings in
from `template/fragments/jobs-without-fan-out.yaml`: a loop over an empty list is refused, so the
template has them only while it has such a job), before the external trigger's section (the tables
policy), after the last `*_TABLE_NAME` in `Globals`, into the trigger's `JOB_FUNCTIONS`,
`JOB_SCHEDULES` (its Mappings.Jobs schedule, as the other jobs') and `DeliverTicks`, and a fanned-out
job into the tick reaper's `REAPED_JOBS` in `Globals` (with its grace). (Its
dashboard, alarms and outputs are the loops'.) The result must load and expand with the new job's
resources in it, or nothing is written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from clockless_tools.scaffold.names import JobNames
from clockless_tools.scaffold.schedule import DAILY, FANNED_OUT_GRACE_MINUTES, ScheduleKeys
from clockless_tools.scaffold.wiring import WiringError
from clockless_tools.template.loader import TemplateError, load_yaml
from clockless_tools.template.model import Template

FRAGMENT: Final = Path(__file__).resolve().parents[1] / "template" / "fragments" / "jobs-without-fan-out.yaml"
FANNED_OUT_LOOPS: Final = ("Jobs", "JobOutputs")
PLAIN_LOOPS: Final = ("JobsWithoutFanOut", "JobsWithoutFanOutOutputs")

SCHEDULE_STATE: Final = """  __STEM__ScheduleState:
    Type: String
    Description: DISABLED deploys __JOB__ paused; `clockless pause`/`resume` change it without a deploy.
    Default: ENABLED
    AllowedValues: [ENABLED, DISABLED]
"""

# Only what differs: every other key takes the loop's DefaultValue, a daily job's numbers (the
# Mappings comment in template.yaml lists them; rule dead-man-alarm checks them against the schedule).
DECLARATION: Final = """    __STEM__:
      Name: __JOB__
      CodeUri: functions/__PACKAGE__/
      Package: __PACKAGE__
__SCHEDULE_KEYS____SHARDS__      Tables: [__STEM__Table]

"""

# A fanned-out job's index shards: its partitions per tick and its workers' MaximumConcurrency, the
# count its repository declares (DUE_INDEX_SHARDS; rule shards-match-concurrency). Written although it
# is the loop's default, so the number to change is in sight.
SHARDS: Final = """      # Its due index's shards (DUE_INDEX_SHARDS in its repository): one worker each.
      Shards: 16
"""

TABLES_POLICY: Final = """  __STEM__TablesPolicy:
    Type: AWS::IAM::ManagedPolicy
    Properties:
      Description: What __JOB__ does to its tables.
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
          - {Sid: ReadDueItems, Effect: Allow, Action: [dynamodb:Query],
             Resource: !Sub "${__STEM__Table.Arn}/index/due-by-time"}
          - {Sid: ApplyDueItems, Effect: Allow, Action: [dynamodb:UpdateItem], Resource: !GetAtt __STEM__Table.Arn}

"""

_TRIGGER_SECTION: Final = "  # ---------------------------------------------------------------- external trigger"


def declare(text: str, names: JobNames, *, fan_out: bool, schedule: ScheduleKeys = DAILY) -> str:
    """template.yaml with the job declared (its schedule keys from `schedule`); raises WiringError
    naming the part that found no place."""
    text = _after_last(
        text, r"^  \w+ScheduleState:\n(?:    .*\n)+", names.fill(SCHEDULE_STATE), "ScheduleState parameter"
    )
    keys = "".join(f"      {line}\n" for line in schedule.lines)
    declaration = (
        names.fill(DECLARATION).replace("__SCHEDULE_KEYS__", keys).replace("__SHARDS__", SHARDS if fan_out else "")
    )
    text = _before(text, "\nConditions:\n", declaration, "the end of Mappings: Jobs:")
    resources_loop, outputs_loop = FANNED_OUT_LOOPS if fan_out else PLAIN_LOOPS
    if not fan_out and _loop_list(text, resources_loop) is None:
        text = _with_plain_loops(text)
    for loop in (resources_loop, outputs_loop):
        text = _add_to_loop(text, loop, names.stem)
    text = _before(text, _TRIGGER_SECTION, names.fill(TABLES_POLICY), "the external trigger's section")
    text = _after_last(
        text, r"^        [A-Z0-9_]+_TABLE_NAME: !Ref \w+\n", f"        {names.env}_TABLE_NAME: !Ref {names.table_id}\n",
        "a table name in Globals",
    )  # fmt: skip
    text = _sub_once(
        text,
        r'^(          JOB_FUNCTIONS: !Sub >-\n(?:            .*\n)*?            .*"\$\{\w+Function\.Arn\}")\}\n',
        rf'\1,\n            "{names.job}": "${{{names.function_id}.Arn}}"}}\n',
        "JOB_FUNCTIONS",
    )
    text = _sub_once(
        text,
        r"^(          JOB_SCHEDULES: !Sub\n            - >-\n(?:              .*\n)*?              .*\})\}\n"
        r"((?:            - |              )\w+: !FindInMap \[Jobs, \w+, Schedule\]\n"
        r"(?:              \w+: !FindInMap \[Jobs, \w+, Schedule\]\n)*)",
        rf'\1,\n              "{names.job}": {{"ScheduleExpression": "${{{names.stem}}}", '
        rf'"ScheduleExpressionTimezone": "UTC"{_local_time_entry(names, schedule)}}}}}\n'
        rf"\2              {names.stem}: !FindInMap [Jobs, {names.stem}, Schedule]\n"
        + _local_time_variables(names, schedule),
        "JOB_SCHEDULES",
    )
    text = _sub_once(
        text,
        r"(            - Sid: DeliverTicks\n(?:              .*\n)+?"
        r"              Resource:\n(?:                - .*\n)+)",
        rf"\1                - !GetAtt {names.function_id}.Arn\n",
        "DeliverTicks",
    )
    if fan_out:
        text = _reaped(text, names, schedule)
    _check(text, names, fan_out=fan_out)
    return text


def _local_time_entry(names: JobNames, schedule: ScheduleKeys) -> str:
    """A job with a LocalTime: its time and zones in the trigger's copy of its schedule."""
    if not schedule.local_time:
        return ""
    return f', "LocalTime": "${{{names.stem}LocalTime}}", "OperatingTimeZones": "${{{names.stem}Zones}}"'


def _local_time_variables(names: JobNames, schedule: ScheduleKeys) -> str:
    if not schedule.local_time:
        return ""
    return (
        f"              {names.stem}LocalTime: !FindInMap [Jobs, {names.stem}, LocalTime]\n"
        f'              {names.stem}Zones: !Join [",", !FindInMap [Jobs, {names.stem}, OperatingTimeZones]]\n'
    )


def _reaped(text: str, names: JobNames, schedule: ScheduleKeys) -> str:
    """The fanned-out job added to the tick reaper's REAPED_JOBS with its grace as its bound (rule
    reaper-covers-fan-out); a template without the reaper is left as it is (the rule says so)."""
    stated = [line.split(":", 1)[1].strip() for line in schedule.lines if line.startswith("GraceMinutes:")]
    grace = stated[0] if stated else str(FANNED_OUT_GRACE_MINUTES)
    edited, count = re.subn(r"^(        REAPED_JOBS: \S+)$", rf"\1,{names.job}={grace}", text, count=1, flags=re.M)
    return edited if count else text


def _loop_list(text: str, loop: str) -> re.Match[str] | None:
    return re.search(rf"^(  Fn::ForEach::{loop}:\n    - Job\n    - \[[^\]\n]*)\]$", text, flags=re.M)


def _add_to_loop(text: str, loop: str, stem: str) -> str:
    found = _loop_list(text, loop)
    if found is None:
        raise WiringError(f"template.yaml: no Fn::ForEach::{loop} with a one-line job list to add {stem} to")
    separator = "" if found.group(1).endswith("[") else ", "
    return text[: found.end(1)] + separator + stem + text[found.end(1) :]


def plain_loops(stems: list[str]) -> tuple[str, str]:
    """The two loops the jobs without fan-out share, as the command writes them into template.yaml
    over these jobs: the Resources loop (with its heading) and the Outputs loop."""
    fragment = FRAGMENT.read_text(encoding="utf-8").replace("    - [NewJob]\n", f"    - [{', '.join(stems)}]\n")
    resources_loop, outputs_loop = fragment.split("\nResources:\n", 1)[1].split("\nOutputs:\n", 1)
    return _PLAIN_HEADING + resources_loop + "\n", outputs_loop


def plain_loop_drift(text: str) -> list[str]:
    """Where template.yaml's loops for the jobs without fan-out differ from the fragment's over the
    same jobs (a change made to one and not the other: `clockless new job` writes the fragment's)."""
    found = _loop_list(text, "JobsWithoutFanOut")
    if found is None:
        return []
    stems = [stem.strip() for stem in found.group(1).rsplit("[", 1)[1].split(",") if stem.strip()]
    problems = []
    for name, written in zip(("JobsWithoutFanOut", "JobsWithoutFanOutOutputs"), plain_loops(stems), strict=True):
        expected = written[written.index(f"  Fn::ForEach::{name}:") :]
        start = text.find(f"  Fn::ForEach::{name}:\n")
        if start < 0:
            problems.append(f"template.yaml: no Fn::ForEach::{name} beside its jobs' other loop")
            continue
        lines, wanted = text[start:].splitlines(), expected.rstrip("\n").splitlines()
        for number, (line, want) in enumerate(zip(lines, wanted, strict=False)):
            if line != want:
                at = text[:start].count("\n") + number + 1
                problems.append(
                    f"template.yaml:{at}: Fn::ForEach::{name} differs from {FRAGMENT.name}: "
                    f"{want.strip()!r} expected, {line.strip()!r} found (change both, or neither)"
                )
                break
    return problems


def _with_plain_loops(text: str) -> str:
    """The fragment's two loops, over no job yet (`_add_to_loop` adds the first): the Resources loop
    before the external trigger's section, the Outputs loop first under Outputs."""
    resources_loop, outputs_loop = plain_loops([])
    text = _before(text, _TRIGGER_SECTION, resources_loop, "the external trigger's section")
    if text.count("\nOutputs:\n") != 1:
        raise WiringError("template.yaml: no Outputs section to add the jobs' outputs loop to")
    return text.replace("\nOutputs:\n", "\nOutputs:\n" + outputs_loop, 1)


_PLAIN_HEADING: Final = (
    "  # Every job that does its work in the scheduled function itself (no fan-out), from its\n"
    "  # declaration in Mappings.Jobs: its function, log group and alarms (the fragment's loop).\n"
)


def env_local(text: str, names: JobNames, *, fan_out: bool) -> str:
    """events/env.local.json with the job's table name and, fanned out, its functions' queue URLs."""
    document = json.loads(text)
    document["Parameters"][f"{names.env}_TABLE_NAME"] = names.table_id
    _add_to_trigger(document, names)
    if not fan_out:
        # Its own entry, empty: the shared "Parameters" (the local endpoint, the tables) are all it reads.
        document[names.function_id] = {}
        return json.dumps(document, indent=2) + "\n"
    docker = "http://host.docker.internal:8765"
    queue = f"{docker}/123456789012/{names.stem}WorkQueue"
    document[names.function_id] = {"AWS_ENDPOINT_URL_SQS": docker, "WORK_QUEUE_URL": queue}
    document[f"{names.stem}WorkerFunction"] = {
        "AWS_ENDPOINT_URL_SQS": docker,
        "WORK_QUEUE_URL": queue,
        "WORK_DEAD_LETTER_QUEUE_URL": f"{docker}/123456789012/{names.stem}WorkDeadLetterQueue",
    }
    return json.dumps(document, indent=2) + "\n"


def _add_to_trigger(document: dict[str, Any], names: JobNames) -> None:
    """The job in the local trigger's JOB_FUNCTIONS, its ARN shaped as the others' (the local function
    of that logical id), so `sam local invoke JobTriggerFunction` can press it."""
    for entry in document.values():
        if not (isinstance(entry, dict) and isinstance(entry.get("JOB_FUNCTIONS"), str)):
            continue
        functions = json.loads(entry["JOB_FUNCTIONS"])
        if functions:
            arn_prefix, _, function_name = next(iter(functions.values())).rpartition(":")
            stack_prefix = function_name[: function_name.rfind("-") + 1]  # clockless-local-
            functions[names.job] = f"{arn_prefix}:{stack_prefix}{names.function_id}"
            entry["JOB_FUNCTIONS"] = json.dumps(functions)


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


def _check(text: str, names: JobNames, *, fan_out: bool) -> None:
    try:
        template = Template(path=Path("template.yaml"), document=load_yaml(text))
        template.resources  # noqa: B018 - expanding the loops is the check
    except TemplateError as error:
        raise WiringError(f"template.yaml would not load with {names.job} declared: {error}") from None
    expected = [names.function_id, *([f"{names.stem}WorkerFunction"] if fan_out else [])]
    missing = [i for i in expected if i not in template.resources]
    if missing or names.job not in template.jobs:
        raise WiringError(f"template.yaml: declaring {names.job} did not write out {', '.join(missing) or 'its job'}")
