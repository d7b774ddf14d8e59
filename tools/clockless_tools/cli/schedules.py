"""`clockless schedules`: UTC schedules checked against the time zones their jobs serve."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table

from clockless_tools.architecture.alarm_table import render_table as render_alarm_timing
from clockless_tools.architecture.latest_success import render_table as render_latest_success
from clockless_tools.cli.common import TemplateOption, fail, load_template
from clockless_tools.template.loader import DEFAULT_TEMPLATE, TemplateError
from clockless_tools.template.model import Template
from clockless_tools.template.scheduler_support import render_table as render_support_table
from clockless_tools.timezones.check import ScheduleCheck, TimeZoneReport, ViolationGroup, check_template
from clockless_tools.timezones.declaration import with_parameter_overrides
from clockless_tools.timezones.event import utc_offset
from clockless_tools.timezones.rule import NOT_AFTER, NOT_BEFORE, SAME_LOCAL_DATE, local_times
from clockless_tools.timezones.suggest import describe_hours
from clockless_tools.timezones.upcoming import UpcomingTicks, upcoming_ticks
from clockless_tools.tzdb import database_version

app = typer.Typer(no_args_is_help=True, help=__doc__)

ParameterOption = Annotated[
    list[str] | None,
    typer.Option(
        "--parameter",
        "-p",
        metavar="NAME=VALUE",
        help="A parameter value as a deploy would override it, e.g. OperatingTimeZones=America/New_York,... "
        "(repeatable; default: the template's defaults).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON, every tick included.")]

_TICK_RULES = (NOT_BEFORE, NOT_AFTER, SAME_LOCAL_DATE)
_RUNS_SHOWN = 3


@app.command("check")
def check(
    template: TemplateOption = DEFAULT_TEMPLATE,
    start: Annotated[
        datetime | None,
        typer.Option(
            "--from",
            formats=["%Y-%m-%d"],
            help="First day (UTC) of the year checked; default today. E.g. --from 2027-01-01",
        ),
    ] = None,
    parameter: ParameterOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check a year of every schedule's ticks against its job's local-time rule in every operating zone.

    Exit 1 on any violation, 2 on a malformed template.
    """
    tpl = _load(template, parameter)
    first_day = start.date() if start is not None else datetime.now(UTC).date()
    try:
        report = check_template(tpl, start=first_day)
    except TemplateError as error:
        raise fail(str(error)) from None
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        _print_report(report, template)
    if not report.ok:
        raise typer.Exit(code=1)


@app.command("show")
def show(
    template: TemplateOption = DEFAULT_TEMPLATE,
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=1000, help="Ticks per job. E.g. -n 10")] = 5,
    after: Annotated[
        str | None,
        typer.Option(
            help="Show ticks after this ISO time (default: now); UTC unless it has an offset. "
            "E.g. --after 2026-12-01T00:00:00Z"
        ),
    ] = None,
    job: Annotated[str | None, typer.Option(help="Only this job. E.g. --job session-cleanup")] = None,
    parameter: ParameterOption = None,
    as_json: JsonOption = False,
) -> None:
    """Each job's next ticks in UTC and in each of its operating zones; a tick breaking its rule is red."""
    tpl = _load(template, parameter)
    moment = _parse_after(after)
    try:
        shown = upcoming_ticks(tpl, after=moment, count=count)
    except TemplateError as error:
        raise fail(str(error)) from None
    if job is not None:
        known = sorted({item.job for item in shown})
        shown = [item for item in shown if item.job == job]
        if not shown:
            raise fail(f"unknown job {job!r} (template.yaml schedules: {', '.join(known) or 'none'})")
    if as_json:
        print(json.dumps({"after": moment.isoformat(), "jobs": [item.as_dict() for item in shown]}, indent=2))
        return
    for item in shown:
        _emit(_upcoming_table(item))


@app.command("alarm-timing")
def alarm_timing(template: TemplateOption = DEFAULT_TEMPLATE) -> None:
    """When each job's dead-man alarm fires after a missed tick, simulated from the template (Markdown)."""
    print(render_alarm_timing(load_template(template)))


@app.command("latest-success")
def latest_success_table(template: TemplateOption = DEFAULT_TEMPLATE) -> None:
    """How late each job's tick can still succeed, term by term, beside the grace it declares (Markdown)."""
    try:
        print(render_latest_success(load_template(template)))
    except TemplateError as error:
        raise fail(str(error)) from None


@app.command("support")
def support() -> None:
    """What clockless supports from EventBridge Scheduler, feature by feature (Markdown)."""
    print(render_support_table())


@app.command("start-dates")
def start_dates(
    template: TemplateOption = DEFAULT_TEMPLATE,
    at: Annotated[
        str | None,
        typer.Option(
            help="Deploy time to compute for (default: now); UTC unless it has an offset. "
            "E.g. --at 2027-01-01T00:00:00Z"
        ),
    ] = None,
) -> None:
    """The StartDate parameters of rate() schedules for a deploy now: NAME=VALUE, for --parameter-overrides.

    Each is the first tick of the template's anchor rhythm at or after the deploy, so CreateSchedule
    (which refuses a StartDate more than 5 minutes in the past) accepts it and no tick moves.
    Prints nothing when no rate() schedule is anchored by a parameter."""
    from clockless_tools.template.rate_anchor import deploy_start_dates

    tpl = load_template(template)
    try:
        values = deploy_start_dates(tpl, _parse_after(at))
    except TemplateError as error:
        raise fail(str(error)) from None
    if values:
        print(" ".join(f"{name}={value}" for name, value in sorted(values.items())))


@app.command("conformance")
def conformance() -> None:
    """The tick engine against AWS's documented ticks: one row per case, with its source and verdict.

    Prints the Markdown table docs/schedule-conformance.md shows; exits 1 if a row fails."""
    from clockless_tools.template.conformance import markdown
    from clockless_tools.template.conformance_cases import CASES

    print(markdown(CASES), end="")
    if any(case.verdict() != "ok" for case in CASES):
        raise typer.Exit(code=1)


# ---------------------------------------------------------------- input


def _load(path: Path, parameters: Sequence[str] | None) -> Template:
    template = load_template(path)
    overrides: dict[str, str] = {}
    for item in parameters or ():
        name, separator, value = item.partition("=")
        if not separator or not name.strip():
            raise fail(f"--parameter {item!r}: expected NAME=VALUE")
        overrides[name.strip()] = value
    try:
        return with_parameter_overrides(template, overrides)
    except TemplateError as error:
        raise fail(str(error)) from None


def _parse_after(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise fail(f"--after {text!r}: not an ISO date or time such as 2027-03-14T00:00Z") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


# ---------------------------------------------------------------- output


def _emit(renderable: RenderableType) -> None:
    """Print at the renderable's natural width when piped, so a wide table is not folded to 80 columns."""
    console = Console()
    if not console.is_terminal:
        natural = console.measure(renderable, options=console.options.update_width(1000)).maximum
        console = Console(width=max(80, natural), soft_wrap=True)
    console.print(renderable, highlight=False)


def _print_report(report: TimeZoneReport, path: Path) -> None:
    _emit(
        f"[bold]schedules check[/] {path.name}: {len(report.schedules)} schedules, every tick from "
        f"{report.start:%Y-%m-%d} to {report.end:%Y-%m-%d} (UTC), in every operating zone"
    )
    _emit(f"time zones: IANA {database_version()}, the pinned tzdata package the layer ships")
    if report.offset_changes:
        zones = Table(box=None, pad_edge=False, show_edge=False)
        zones.add_column("zone")
        zones.add_column("UTC offset changes in the year")
        for zone, changes in report.offset_changes.items():
            cells = [f"{c.at:%Y-%m-%d %H:%M}Z {c.before} → {c.after}" for c in changes] or ["none (no DST)"]
            zones.add_row(zone, ", ".join(cells))
        _emit(zones)
    for check in report.schedules:
        _print_schedule(check)
    violations = report.violations
    if violations:
        failed = sum(not check.ok for check in report.schedules)
        _emit(
            f"[bold red]schedules check failed:[/] {len(violations)} violations in {failed} of "
            f"{len(report.schedules)} schedules (every tick and zone: --json)"
        )
    else:
        _emit("[green]schedules check passed[/]")


def _print_schedule(check: ScheduleCheck) -> None:
    mark = "[green]ok[/]  " if check.ok else "[bold red]FAIL[/]"
    _emit(
        f"\n{mark} [bold]{check.job}[/]  {check.function_id}.{check.event_id}  "
        f"{check.expression} {check.timezone or '(no ScheduleExpressionTimezone)'}"
    )
    declaration = check.declaration
    if declaration is not None:
        zones = f"{declaration.zones_parameter} = " if declaration.zones_parameter else ""
        zones += ", ".join(declaration.zones)
        rule = declaration.rule.describe() if declaration.rule else "none (no local hour matters to this job)"
        _emit(f"     zones: {zones}\n     rule: {rule}")
    if check.local_time is not None:
        hours = "; ".join(escape(schedule.describe()) for schedule in check.zone_schedules)
        _emit(
            f"     local time: {check.local_time} in each zone ({hours}); a tick serves the zones whose clocks show it"
        )
    for violation in check.violations:
        if violation.tick is None:
            _emit(f"     [red]✗ {violation.rule}[/]: {violation.detail}")
    tick_groups = [group for group in check.groups() if group.first.tick is not None]
    if check.not_expanded is not None:
        _emit(f"     ticks not expanded: {check.not_expanded}")
    else:
        broken = sum(len(group.violations) for group in tick_groups)
        ticks_broken = len({tick for group in tick_groups for tick in group.ticks})
        summary = "none breaks the rule" if not broken else f"{ticks_broken} break the rule ({broken} zone breaches)"
        _emit(f"     {check.ticks_checked} ticks checked: {summary}")
    if tick_groups:
        _emit(_groups_table(tick_groups, declaration.zones if declaration else ()))
    if check.suggested_hours is not None:
        hours = describe_hours(check.suggested_hours, check.suggestion_minute)
        example = f" (e.g. {check.suggested_expression})" if check.suggested_expression else ""
        if not check.suggested_hours:
            example = ": no daily UTC hour keeps this rule in every zone all year"
        _emit(f"     UTC hours that keep the rule in every zone all year: [bold]{hours}[/]{example}")
        if check.no_hour_advice:
            _emit(f"     what to do: {escape(check.no_hour_advice)}")


def _groups_table(groups: list[ViolationGroup], zones: Sequence[str]) -> Table:
    def order(group: ViolationGroup) -> tuple[int, int, timedelta, str, datetime]:
        first = group.first
        zone_index = zones.index(first.zone) if first.zone in zones else len(zones)
        local = first.local_time
        offset = (local.utcoffset() if local else None) or timedelta(0)
        return _TICK_RULES.index(first.rule), zone_index, offset, f"{local:%H:%M}", group.ticks[0]

    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("rule broken")
    table.add_column("zone")
    table.add_column("local time")
    table.add_column("ticks", justify="right")
    table.add_column("UTC ticks: first … last (count)")
    for group in sorted(groups, key=order):
        first = group.first
        local = first.local_time
        assert local is not None  # tick violations always carry their local time
        runs = group.runs()
        shown = [
            f"{a:%Y-%m-%dT%H:%M}Z" if n == 1 else f"{a:%Y-%m-%dT%H:%M}Z … {b:%Y-%m-%dT%H:%M}Z ({n})"
            for a, b, n in runs[:_RUNS_SHOWN]
        ]
        if len(runs) > _RUNS_SHOWN:
            shown.append(f"and {len(runs) - _RUNS_SHOWN} more stretches")
        table.add_row(
            f"{first.rule}: {first.detail}",
            first.zone,
            f"{local:%H:%M} {local.tzname()} ({utc_offset(local)})",
            str(len(group.violations)),
            "\n".join(shown),
        )
    return table


def _upcoming_table(item: UpcomingTicks) -> Table:
    rule = item.rule
    caption = f"rule: {rule.describe()}" if rule else "no local-time rule"
    if item.note:
        caption = item.note
    table = Table(
        title=f"{item.job}  {item.expression} {item.timezone or ''}",
        caption=caption,
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("UTC")
    for zone in item.zones:
        table.add_column(zone.rsplit("/", 1)[-1].replace("_", " "))
    for tick in item.ticks:
        broken = {b.zone for b in item.breaches.get(tick, ())}
        cells = [f"{tick:%a %Y-%m-%d %H:%M}"]
        for zone, local in local_times(tick, item.zones).items():
            text = f"{local:%a %H:%M} {local.tzname()}"
            cells.append(f"[bold red]{text} ✗[/]" if zone in broken else text)
        table.add_row(*cells)
    return table
