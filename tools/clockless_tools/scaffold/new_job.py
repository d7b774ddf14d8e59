"""`clockless new job NAME [--fan-out]`: write a job's package, tests, demo seed, table and declaration.

Refuses (changing nothing) a name that is not a job name, or one the project already has. Every
file is computed first and written only when all edits succeeded, so a failure leaves the
project as it was."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from clockless_tools.errors import ToolError
from clockless_tools.scaffold.declaration import declare, env_local
from clockless_tools.scaffold.names import JobNameError, JobNames
from clockless_tools.scaffold.package import package_files
from clockless_tools.scaffold.schedule import ScheduleOptionError, schedule_keys
from clockless_tools.scaffold.tests import test_files
from clockless_tools.scaffold.wiring import WiringError, add_table
from clockless_tools.template.events import write_events
from clockless_tools.template.loader import TemplateError, load_yaml
from clockless_tools.template.model import Template


class NewJobError(ToolError, ValueError):
    """The job cannot be made as asked; nothing was written. The message says why."""


@dataclass
class NewJob:
    names: JobNames
    fan_out: bool
    created: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    # The declaration's schedule keys as written; None when --schedule was not given (the daily default).
    schedule_lines: tuple[str, ...] | None = None

    def left_to_do(self) -> list[str]:
        """What the command does not do, in the order to do it (docs/adding-a-job.md says each in full)."""
        n = self.names
        schedule = (
            f"its schedule: Mappings.Jobs.{n.stem} in template.yaml says daily at 03:00 UTC with no local-time "
            "rule (the loop's defaults); set Schedule (or make the job with --schedule, --zones and --local-time, "
            "which derive the rest), and where they differ LocalTimeRule, OperatingTimeZones, GraceMinutes and the "
            "dead-man numbers for your job (`clockless schedules check`, rule dead-man-alarm), and "
            "TickPeriodSeconds if it is no longer daily (its page's succeeded ticks; tests/unit/test_dashboard.py)"
            if self.schedule_lines is None
            else f"its schedule: Mappings.Jobs.{n.stem} in template.yaml has {'; '.join(self.schedule_lines)} "
            "(the numbers the rules ask for, derived from the schedule); `clockless arch` and "
            "`clockless schedules check` say which key to change if you change one"
        )
        steps = [
            schedule,
            "`make setup` (installs the new package editable)",
            f"the domain: rename Item and write what applying one means in {n.package_dir}/logic.py and "
            f"repository.py, the table's keys and index in template.yaml ({n.table_id}) and its statements in "
            f"{n.stem}TablesPolicy, its demo data in demo.py",
            "`make docs` (the tables that list every job, such as docs/alarms.md's alarm timing, follow the template)",
            f"`clockless arch`, `make test`, `make run` (it must show {n.job} applying its seeded items exactly once)",
        ]
        return steps


def new_job(
    root: Path,
    name: str,
    *,
    fan_out: bool,
    schedule: str | None = None,
    zones: str | None = None,
    local_time: str | None = None,
    at: str | None = None,
    checked_from: date | None = None,
) -> NewJob:
    """Make the job; `schedule`, `zones` and `local_time` (the CLI's options) set its declaration's
    schedule keys, the numbers the rules ask for derived from them (scaffold/schedule.py), the
    local-time rule checked over the year from `checked_from` (default today)."""
    try:
        names = JobNames.of(name)
        keys = schedule_keys(
            schedule,
            fan_out=fan_out,
            zones=zones,
            local_time=local_time,
            at=at,
            checked_from=checked_from or datetime.now(UTC).date(),
        )
    except (JobNameError, ScheduleOptionError) as error:
        raise NewJobError(str(error)) from None
    template_path = root / "template.yaml"
    _refuse_existing(root, names, template_path)
    writes: dict[Path, str] = {}
    for file, text in package_files(fan_out=fan_out).items():
        writes[root / names.package_dir / file] = names.fill(text)
    for relative, text in test_files(names.package, fan_out=fan_out).items():
        writes[root / relative] = names.fill(text)
    created = sorted(written.relative_to(root).as_posix() for written in writes)
    try:
        template_text = add_table(template_path.read_text(encoding="utf-8"), names)
        writes[template_path] = declare(template_text, names, fan_out=fan_out, schedule=keys)
        env_path = root / "events" / "env.local.json"
        writes[env_path] = env_local(env_path.read_text(encoding="utf-8"), names, fan_out=fan_out)
    except (WiringError, OSError) as error:
        raise NewJobError(str(error)) from None
    for path, text in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    # The declared job's sample events (`clockless events`): the others' files are unchanged.
    events = write_events(Template.load(template_path), root / "events")
    return NewJob(
        names,
        fan_out,
        created=[*created, *sorted(path.relative_to(root).as_posix() for path in events)],
        edited=["template.yaml", "events/env.local.json"],
        schedule_lines=None if schedule is None and zones is None and local_time is None and at is None else keys.lines,
    )


def _refuse_existing(root: Path, names: JobNames, template_path: Path) -> None:
    if (root / names.code_dir).exists():
        raise NewJobError(f"{names.code_dir}/ already exists: job {names.job!r} is there (nothing written)")
    try:
        resources = load_yaml(template_path.read_text(encoding="utf-8"))["Resources"]
    except (TemplateError, OSError) as error:
        raise NewJobError(f"cannot read {template_path.name}: {error}") from None
    taken = [logical_id for logical_id in (names.function_id, names.table_id) if logical_id in resources]
    if taken:
        raise NewJobError(f"template.yaml already has {', '.join(taken)}: pick another name (nothing written)")
