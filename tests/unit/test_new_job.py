"""`clockless new job`: what it writes for a job with and without fan-out (and that it edits no
project list), and the names and collisions it refuses, changing nothing. (The whole exercise, rules, tests
and simulation of a job it made, is tests/integration/test_new_job_exercise.py, marked slow.)"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clockless_tools.architecture import check as check_rules
from clockless_tools.architecture.dead_man_alarm import dead_man_alarm_problems
from clockless_tools.architecture.job_bounds import read_bounds
from clockless_tools.architecture.latest_success import latest_success
from clockless_tools.architecture.local_tick_alarm import LOCAL_TICK_ALARM_RULE
from clockless_tools.architecture.project import Project
from clockless_tools.architecture.trigger_schedules import SCHEDULES_VARIABLE, check_trigger_schedules
from clockless_tools.cli.app import app
from clockless_tools.scaffold.names import JobNames
from clockless_tools.simulate.plan import RETRY_BACKOFF, plan_deliveries
from clockless_tools.template.intrinsics import resolve
from clockless_tools.template.loader import load_yaml
from clockless_tools.template.model import Template
from clockless_tools.timezones.check import check_template
from clockless_tools.timezones.rule import LOCAL_TIME_SCHEDULE
from job_trigger.settings import JobTriggerSettings
from tests.conftest import PROJECT_ROOT
from tests.jobs import jobs

RUFF = Path(sys.executable).with_name("ruff")
# A job the template declares: its name is taken.
FIRST = jobs()[0]


def _unused_names(count: int) -> list[str]:
    """Names of jobs the project does not have yet (so these tests pass beside any job a user adds)."""
    taken = {job.name for job in jobs()} | {p.name.replace("_", "-") for p in (PROJECT_ROOT / "functions").iterdir()}
    candidates = ["subscription-expiry", "nightly-digest", "weekly-report", "probe-job-a", "probe-job-b", "probe-job-c"]
    return [name for name in candidates if name not in taken][:count]


FANNED, PLAIN, SECOND_PLAIN = (JobNames.of(name) for name in _unused_names(3))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The files `clockless new job` reads and edits, copied."""
    root = tmp_path / "project"
    (root / "functions").mkdir(parents=True)
    (root / "tests" / "unit").mkdir(parents=True)
    (root / "events").mkdir()
    for name in (
        "template.yaml",
        "pyproject.toml",
        "tests/__init__.py",
        "tests/unit/__init__.py",
        "events/env.local.json",
    ):
        shutil.copy2(PROJECT_ROOT / name, root / name)
    return root


def new(project: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["new", "job", *args, "--project", str(project)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("fan_out", [True, False], ids=["fanned-out", "single"])
def test_a_new_job_gets_its_package_tests_and_table_and_no_project_list_edit(project: Path, fan_out: bool) -> None:
    # When a job is made
    code, out, _ = new(project, FANNED.job, *(["--fan-out"] if fan_out else []))

    # Then its package, demo seed and tests are written, the worker only when fanned out
    assert code == 0, out
    package = project / FANNED.package_dir
    expected = {"__init__.py", "handler.py", "logic.py", "repository.py", "settings.py", "demo.py"}
    assert {p.name for p in package.iterdir()} == expected | ({"worker.py"} if fan_out else set())
    assert (project / "tests" / "unit" / f"test_{FANNED.package}_logic.py").is_file()
    assert (project / "tests" / "unit" / f"test_{FANNED.package}_repository.py").is_file()
    repository = (package / "repository.py").read_text(encoding="utf-8")
    assert ("DuePartitionWork" in repository) is fan_out
    # And only a fanned-out job's due index is sharded (each shard a partition of its ticks)
    assert ("DUE_INDEX_SHARDS" in repository) is fan_out
    assert ("shard_for(" in repository) is fan_out
    # And every private helper it defines is used (a job without fan-out decodes no messages)
    for helper in re.findall(r"^def (_\w+)\(", repository, flags=re.MULTILINE):
        assert len(re.findall(rf"\b{helper}\b", repository)) > 1, helper
    # And pyproject.toml is left alone: the package is found there, not listed (setup.py, ruff, mypy, contracts)
    assert (project / "pyproject.toml").read_bytes() == (PROJECT_ROOT / "pyproject.toml").read_bytes()
    # And the template gains its table, with the sparse index, and still loads
    template = Template.load(project / "template.yaml")
    table = template.tables[FANNED.table_id]
    assert [index["IndexName"] for index in table["GlobalSecondaryIndexes"]] == ["due-by-time"]
    # And the job is declared either way: its coordinator written out, with a worker and queues only
    # when fanned out, its tables declared for least privilege, the trigger able to press it
    assert FANNED.job in template.jobs
    assert template.function_for_job(FANNED.job).logical_id == FANNED.function_id
    assert bool(template.workers_of(FANNED.function_id)) is fan_out
    if fan_out:
        assert template.work_queue_for_job(FANNED.job).logical_id == f"{FANNED.stem}WorkQueue"
    # And a fanned-out job's stuck ticks are the tick reaper's, at its grace (rule reaper-covers-fan-out)
    reaped = re.search(r"^        REAPED_JOBS: (\S+)$", (project / "template.yaml").read_text(encoding="utf-8"), re.M)
    assert reaped is not None
    assert (f"{FANNED.job}=135" in reaped.group(1).split(",")) is fan_out
    # And it says what is left to do
    said = " ".join(out.split())
    assert "left to do" in said
    assert f"its schedule: Mappings.Jobs.{FANNED.stem}" in said


def test_a_second_job_without_fan_out_joins_the_first_ones_loop(project: Path) -> None:
    # Given a job without fan-out, which brought in the loop of such jobs (or joined the loop a job
    # the project already has brought in)
    template_path = project / "template.yaml"
    before = template_path.read_text(encoding="utf-8").splitlines()
    already = _plain_loop_list(before)
    assert new(project, PLAIN.job)[0] == 0
    first = template_path.read_text(encoding="utf-8").splitlines()
    # When another is made
    code, out, _ = new(project, SECOND_PLAIN.job)

    # Then both are in the one loop, after any there already, each written out with its own function and no worker
    assert code == 0, out
    text = template_path.read_text(encoding="utf-8")
    assert text.count("Fn::ForEach::JobsWithoutFanOut:") == 1
    assert _plain_loop_list(text.splitlines()) == [*already, PLAIN.stem, SECOND_PLAIN.stem]
    template = Template.load(template_path)
    for names in (PLAIN, SECOND_PLAIN):
        assert template.function_for_job(names.job).logical_id == names.function_id
        assert not template.workers_of(names.function_id)
    # And the second only joined the loops the first brought in: it writes out no resource but its
    # table and tables policy
    assert _types_written_out(first, text.splitlines()) == ["AWS::DynamoDB::Table", "AWS::IAM::ManagedPolicy"]


def _plain_loop_list(lines: list[str]) -> list[str]:
    """The ids in Fn::ForEach::JobsWithoutFanOut's list; [] while the template has no such loop."""
    if "  Fn::ForEach::JobsWithoutFanOut:" not in lines:
        return []
    listed = lines[lines.index("  Fn::ForEach::JobsWithoutFanOut:") + 2].strip()
    assert listed.startswith("- ["), listed
    assert listed.endswith("]"), listed
    return [stem.strip() for stem in listed[3:-1].split(",") if stem.strip()]


# Names sorting before, between and after the kit's packages: isort puts the job's imports among them.
@pytest.mark.parametrize("name", ["nightly-report", "a-report", "c-digest"])
def test_the_code_it_writes_passes_ruff_as_the_project_lints_it(project: Path, name: str) -> None:
    # The kit and the tools: ruff tells first-party imports by the packages under pyproject's `src`.
    for folder in ("layers", "tools"):
        shutil.copytree(PROJECT_ROOT / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"))
    new(project, name, "--fan-out")

    done = subprocess.run(
        [str(RUFF), "check", "--no-cache", "functions", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    formatted = subprocess.run(
        [str(RUFF), "format", "--check", "--no-cache", "functions", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 0, done.stdout
    assert formatted.returncode == 0, formatted.stdout


@pytest.mark.parametrize(
    ("name", "complaint"),
    [
        ("Subscription_Expiry", "must be lowercase words joined by hyphens"),
        ("9-lives", "must be lowercase words joined by hyphens"),
        ("expiry-", "must be lowercase words joined by hyphens"),
        ("clockless", "which the project already uses"),
        (FIRST.name, f"functions/{FIRST.package}/ already exists"),
    ],
)
def test_a_bad_or_taken_name_is_refused_and_nothing_is_written(project: Path, name: str, complaint: str) -> None:
    (project / "functions" / FIRST.package).mkdir()
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}

    code, _, err = new(project, name)

    assert code == 2
    assert complaint in err
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_a_name_whose_resources_the_template_has_is_refused(project: Path) -> None:
    code, _, err = new(project, FIRST.name)

    assert code == 2
    assert f"template.yaml already has {FIRST.function_id}" in err


def test_a_new_job_writes_out_only_its_table_and_tables_policy(project: Path) -> None:
    # When a fanned-out job is made
    before = (project / "template.yaml").read_text(encoding="utf-8").splitlines()
    assert new(project, FANNED.job, "--fan-out")[0] == 0
    after = (project / "template.yaml").read_text(encoding="utf-8").splitlines()

    # Then the only resources written into template.yaml are its table and its tables policy: its
    # functions, schedule, queues, alarms and dashboard page are the loop's, declared once
    assert _types_written_out(before, after) == ["AWS::DynamoDB::Table", "AWS::IAM::ManagedPolicy"]
    template = Template.load(project / "template.yaml")
    assert template.function_for_job(FANNED.job).logical_id == FANNED.function_id


def test_the_local_trigger_can_press_the_new_job(project: Path) -> None:
    assert new(project, PLAIN.job)[0] == 0

    env = json.loads((project / "events" / "env.local.json").read_text(encoding="utf-8"))
    functions = json.loads(env["JobTriggerFunction"]["JOB_FUNCTIONS"])
    assert functions[PLAIN.job].endswith(f":function:clockless-local-{PLAIN.function_id}")
    assert env[PLAIN.function_id] == {}


def _types_written_out(before: list[str], after: list[str]) -> list[str]:
    """The resource types of the lines added between two versions of template.yaml."""
    added = [line[1:] for line in difflib.unified_diff(before, after, lineterm="", n=0) if line.startswith("+")]
    return sorted(line.split("Type:", 1)[1].strip() for line in added if line.strip().startswith("Type: AWS::"))


def test_a_schedule_given_writes_the_numbers_the_rules_ask_for(project: Path) -> None:
    # When a fanned-out job is made every 15 minutes (its grace: 59 + 180 + 420 + 120 + 285 s of fan-out
    # + 310 s of a failed partition's redelivery = 1,374 s, 23 min, rounded up to 25)
    code, out, _ = new(project, FANNED.job, "--fan-out", "--schedule", "cron(0/15 * * * ? *)")

    # Then its declaration holds the schedule and the numbers derived from it, its grace the reaper's bound
    assert code == 0, out
    text = (project / "template.yaml").read_text(encoding="utf-8")
    assert re.search(rf"^        REAPED_JOBS: \S*,{FANNED.job}=25$", text, re.M)
    block = text[text.index(f"    {FANNED.stem}:\n") :].split("\n\n", 1)[0]
    for line in (
        "Schedule: cron(0/15 * * * ? *)",
        "SchedulerMaxEventAgeSeconds: 180",
        "LambdaMaxEventAgeSeconds: 420",
        "GraceMinutes: 25",
        "DeadManPeriodSeconds: 300",
        "DeadManPeriods: 8",
        "TickPeriodSeconds: 900",
    ):
        assert f"      {line}\n" in block + "\n", line
    # And the rules that read those numbers hold for it
    template = Template.load(project / "template.yaml")
    schedule = template.jobs[FANNED.job]
    lateness = latest_success(template, schedule)
    grace = read_bounds(template.function(schedule.function_id)).grace
    assert lateness.minimum_grace_minutes <= grace.total_seconds() // 60
    assert lateness.precision + lateness.window + lateness.scheduler_retries < 900
    assert [p for p in dead_man_alarm_problems(template) if p.job == FANNED.job] == []
    # And the HTTP trigger places its ticks with that schedule (rule trigger-schedules)
    trigger = template.function("JobTriggerFunction").environment[SCHEDULES_VARIABLE]
    assert json.loads(str(resolve(trigger, template)))[FANNED.job] == {
        "ScheduleExpression": "cron(0/15 * * * ? *)",
        "ScheduleExpressionTimezone": "UTC",
    }
    assert list(check_trigger_schedules(Project.at(project))) == []


# Schedules a team writes (minute :30, every 5/10/20 minutes, weekdays, a rate()), either kind of job.
SPREAD = [
    ("cron(30 13 * * ? *)", False),
    ("cron(0/10 * * * ? *)", True),
    ("cron(0/5 * * * ? *)", False),
    ("cron(0 6 ? * MON-FRI *)", True),
    ("rate(20 minutes)", True),
]


@pytest.mark.parametrize(("schedule", "fan_out"), SPREAD, ids=[f"{s}{' fan-out' if f else ''}" for s, f in SPREAD])
def test_any_schedule_gets_numbers_the_rules_and_the_simulator_agree_with(
    project: Path, schedule: str, fan_out: bool
) -> None:
    code, out, err = new(project, FANNED.job, *(["--fan-out"] if fan_out else []), "--schedule", schedule)

    assert code == 0, out + err
    template = Template.load(project / "template.yaml")
    declared = template.jobs[FANNED.job]
    period = declared.spec(template).nominal_period().total_seconds()
    # The rules that read the derived numbers hold
    lateness = latest_success(template, declared)
    grace = read_bounds(template.function(declared.function_id)).grace
    assert lateness.minimum_grace_minutes <= grace.total_seconds() // 60
    assert lateness.precision + lateness.window + lateness.scheduler_retries < period
    assert [p for p in dead_man_alarm_problems(template) if p.job == FANNED.job] == []
    # And every failure the simulator plans is retried within the function's bounds, as Lambda
    # retries it (1, then 2 minutes later), so `make run` counts every failure retried
    times = declared.spec(template).ticks_between(datetime(2027, 1, 4, tzinfo=UTC), datetime(2027, 1, 6, tzinfo=UTC))
    plans = [plan for plan in plan_deliveries(template, {FANNED.job: times}, seed=3) if plan.fail_after]
    assert plans
    for plan in plans:
        assert plan.retries is not None
        waited = sum((RETRY_BACKOFF * 2**n for n in range(len(plan.fail_after))), timedelta())
        assert len(plan.fail_after) <= plan.retries.max_retries
        assert waited.total_seconds() <= plan.retries.max_event_age_seconds


def test_a_rate_is_declared_as_the_cron_of_its_rhythm_and_says_so(project: Path) -> None:
    code, out, _ = new(project, PLAIN.job, "--schedule", "rate(20 minutes)")

    assert code == 0, out
    text = (project / "template.yaml").read_text(encoding="utf-8")
    assert "      # --schedule rate(20 minutes): the same rhythm as a cron counted from 00:00 UTC" in text
    assert "      Schedule: cron(0/20 * * * ? *)\n" in text
    assert "rate(20 minutes)" in " ".join(out.split())


def test_zones_and_a_local_time_rule_go_into_the_declaration_and_are_checked(project: Path) -> None:
    code, out, _ = new(
        project, PLAIN.job, "--schedule", "cron(0 5 * * ? *)", "--zones", "Europe/Berlin",
        "--local-time", "not_before=06:00,same_local_date",
    )  # fmt: skip

    assert code == 0, out
    template = Template.load(project / "template.yaml")
    found = next(c for c in check_template(template, start=date(2027, 1, 1)).schedules if c.job == PLAIN.job)
    assert found.ok
    assert found.declaration is not None
    assert found.declaration.zones == ("Europe/Berlin",)
    assert found.ticks_checked == 365


def test_a_local_time_in_two_zones_is_one_declaration_whose_schedule_is_generated_and_held_to_it(
    project: Path,
) -> None:
    # When a job keeps 07:30 in New York and in Chicago (12:30/11:30 UTC and 13:30/12:30 UTC with DST)
    code, out, _ = new(project, PLAIN.job, "--at", "07:30", "--zones", "America/New_York,America/Chicago")

    # Then its declaration says the local time once, and its Schedule is the cron of those UTC hours
    assert code == 0, out
    text = (project / "template.yaml").read_text(encoding="utf-8")
    assert '      LocalTime: "07:30"\n      Schedule: cron(30 11,12,13 * * ? *)\n' in text
    assert "      # America/New_York 12:30 UTC (UTC-05:00), 11:30 UTC (UTC-04:00)\n" in text
    assert "      # America/Chicago 13:30 UTC (UTC-06:00), 12:30 UTC (UTC-05:00)\n" in text
    template = Template.load(project / "template.yaml")
    found = next(c for c in check_template(template, start=date(2027, 1, 1)).schedules if c.job == PLAIN.job)
    assert found.ok, found.violations
    # And its ticks are 07:30 in one zone each, two a day; the cron's third instant is no tick
    spec = template.jobs[PLAIN.job].spec(template)
    ticks = spec.ticks_between(datetime(2027, 7, 1, tzinfo=UTC), datetime(2027, 7, 2, tzinfo=UTC))
    assert ticks == [datetime(2027, 7, 1, 11, 30, tzinfo=UTC), datetime(2027, 7, 1, 12, 30, tzinfo=UTC)]
    assert not spec.is_tick(datetime(2027, 7, 1, 13, 30, tzinfo=UTC))
    # And the numbers derived from them (the ticks an hour apart) hold the rules; its page sums a day
    # (each zone's one tick), and each zone's missed tick is its LocalTickMissedAlarm's
    assert [p for p in dead_man_alarm_problems(template) if p.job == PLAIN.job] == []
    assert "TickPeriodSeconds" not in text.split(f"    {PLAIN.stem}:\n", 1)[1].split("\n\n", 1)[0]
    assert f"{PLAIN.stem}LocalTickMissedAlarm" in template.resources
    assert check_rules(Project.at(project), [LOCAL_TICK_ALARM_RULE]) == []
    # And the HTTP trigger keeps the same ticks of the cron (rule trigger-schedules), refusing 13:30 in summer
    trigger = template.function("JobTriggerFunction").environment[SCHEDULES_VARIABLE]
    copied = json.loads(str(resolve(trigger, template)))[PLAIN.job]
    assert copied == {
        "ScheduleExpression": "cron(30 11,12,13 * * ? *)",
        "ScheduleExpressionTimezone": "UTC",
        "LocalTime": "07:30",
        "OperatingTimeZones": "America/New_York,America/Chicago",
    }
    assert list(check_trigger_schedules(Project.at(project))) == []
    settings = JobTriggerSettings.from_env({
        "JOB_FUNCTIONS": json.dumps({PLAIN.job: "arn:aws:lambda:eu-west-1:123456789012:function:f"}),
        "JOB_SCHEDULES": json.dumps({PLAIN.job: copied}), "LEDGER_TABLE_NAME": "l", "IDEMPOTENCY_TABLE_NAME": "i",
        "TRIGGER_SECRET_ID": "s", "TRIGGER_SECRET_MAX_AGE_SECONDS": "300", "TRIGGER_WINDOW_MINUTES": "60",
    })  # fmt: skip
    placed = settings.job_schedules[PLAIN.job]
    assert placed.is_tick(datetime(2027, 7, 1, 11, 30, tzinfo=UTC))
    assert not placed.is_tick(datetime(2027, 7, 1, 13, 30, tzinfo=UTC))
    # (a copy without the local time would let 13:30 through as a tick: planted, the rule names it)
    entry = f', "LocalTime": "${{{PLAIN.stem}LocalTime}}", "OperatingTimeZones": "${{{PLAIN.stem}Zones}}"'
    assert entry in text
    (project / "template.yaml").write_text(text.replace(entry, "", 1), encoding="utf-8")
    assert [v.message.split(", but")[0] for v in check_trigger_schedules(Project.at(project))] == [
        f"{SCHEDULES_VARIABLE}[{PLAIN.job!r}].LocalTime is not set",
        f"{SCHEDULES_VARIABLE}[{PLAIN.job!r}].OperatingTimeZones is not set",
    ]
    # And a Schedule edited away from the declaration fails the check, naming the cron to write
    # (in this job's own entry: a project may hold another job at the same local time)
    head, own = text.split(f"    {PLAIN.stem}:\n", 1)
    own = own.replace("Schedule: cron(30 11,12,13 * * ? *)", "Schedule: cron(30 11,12 * * ? *)", 1)
    edited = f"{head}    {PLAIN.stem}:\n{own}"
    drifted = Template(path=project / "template.yaml", document=load_yaml(edited))
    check = next(c for c in check_template(drifted, start=date(2027, 1, 1)).schedules if c.job == PLAIN.job)
    assert [(v.rule, v.detail.split(" (", 1)[0]) for v in check.violations] == [
        (LOCAL_TIME_SCHEDULE, "ScheduleExpression cron(30 11,12 * * ? *) is not the cron of 07:30 local in "
         "America/New_York, America/Chicago over the year: cron(30 11,12,13 * * ? *)")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        (["--schedule", "cron(0 8 * * ? *)", "--zones", "Europe/Berlin",
          "--local-time", "not_before=09:00,not_after=09:59"],
         "no one UTC hour keeps the rule all year, because the zones' UTC offsets change: use two schedules"),
        (["--schedule", "cron(0 8 * * ? *)", "--zones", "Europe/Berlin",
          "--local-time", "not_before=09:00,not_after=09:59"],
         "or a wider rule, --local-time not_before=09:00, kept all year by a daily tick at 08:00-21:00 UTC"),
        (["--schedule", "cron(0 5 * * ? *)", "--zones", "Europe/Berlin", "--local-time", "not_before=09:00"],
         "UTC hours that keep it all year: 08:00-"),
        (["--schedule", "rate(7 minutes)"], "write the schedule as a cron"),
        (["--schedule", "cron(0 25 * * ? *)"], "--schedule 'cron(0 25 * * ? *)'"),
        (["--zones", "Europe/Atlantis"], "'Europe/Atlantis' is not an IANA time zone"),
        (["--local-time", "not_before=06:00"], "--local-time needs --zones"),
        (["--schedule", "cron(0 6 ? * MON *)"], "exceed the 7 days a CloudWatch alarm can look back"),
        (["--at", "07:30", "--schedule", "cron(30 12 * * ? *)", "--zones", "America/New_York"],
         "--at 07:30 writes the schedule"),
        (["--at", "07:30"], "--at 07:30 needs --zones"),
        # The job: 07:30 to 08:30 local in New York and Chicago, which no one UTC hour keeps.
        (["--schedule", "cron(30 13 * * ? *)", "--zones", "America/New_York,America/Chicago",
          "--local-time", "not_before=07:30,not_after=08:30"],
         'or one declaration, a tick at 07:30 in each zone: LocalTime: "07:30" with Schedule: '
         "cron(30 11,12,13 * * ? *), every UTC hour 07:30 falls on in the year "
         "(`clockless new job <name> --at 07:30 --zones <zones>` writes both"),
        (["--at", "7:30", "--zones", "America/New_York"], "--at: '7:30' is not a 24-hour HH:MM time"),
        (["--at", "07:30", "--zones", "America/New_York,Asia/Kolkata"],
         "falls on 2 different minute(s) of the UTC hour"),
        (["--at", "07:30", "--zones", "America/New_York,America/Chicago", "--local-time", "not_before=08:00"],
         "--at 07:30 breaks --local-time not_before=08:00 in the zone it serves on 730 ticks"),
    ],
)  # fmt: skip
def test_options_that_cannot_be_used_are_refused_and_nothing_is_written(
    project: Path, options: list[str], complaint: str
) -> None:
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}

    code, _, err = new(project, PLAIN.job, *options)

    assert code == 2
    assert complaint in " ".join(err.split())
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
