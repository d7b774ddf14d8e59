"""The exercise a new user does, as a test: in a copy of the project, `clockless new job` makes a
third job, a small domain is filled in, and the rules, the job's own tests, its types and a short
simulation of it are all green. Fails when a step the command should do (or the docs say) is missing.
And the exercise of a team adding jobs at once, at a spread of schedules in a few mixes (minute :30,
every 5, 10 and 15 minutes, weekdays, a rate(), a zone at a local hour, a local time in two zones;
`MIXES`): in a copy of the whole project, `make docs` and then every suite, linter and check
`make test` runs pass with no edit to the project's own tests or docs.
And the skeleton fanned out every 15 minutes, on an hour (a slow night) where a late tick leaves an item to the
next tick: proved, with the note that its ledger counts moved (docs/simulation.md).

Slow (a project copy, mypy, pytest and a simulation in subprocesses): `pytest -m slow`. The copy
is not installed (`make setup` would build a venv); the new package goes on PYTHONPATH instead,
which is what the editable install gives it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest

from clockless_tools.scaffold.names import JobNames
from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.slow

COPIED = ("template.yaml", "pyproject.toml", "functions", "layers", "events", "tools", "tests")
BIN = Path(sys.executable).parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for name in COPIED:
        source = PROJECT_ROOT / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
            shutil.copytree(source, root / name, ignore=ignore)
        else:
            shutil.copy2(source, root / name)
    _with_mypy_cache(root)
    return root


def _with_mypy_cache(root: Path) -> None:
    """The project's mypy cache, when `make test` left one (CI runs it first), copied with the files'
    times: mypy then checks the new job's modules and what imports them, not every module cold
    (three times, 20 s of CPU each); a file whose size, time or hash differs is checked again."""
    cache = PROJECT_ROOT / ".mypy_cache"
    if cache.is_dir():
        shutil.copytree(cache, root / ".mypy_cache")


def run(project: Path, package: str, *args: str) -> subprocess.CompletedProcess[str]:
    # As from a shell: none of this test process's own endpoints or pytest state.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT_URL", "PYTEST_"))}
    env = {**inherited, "PYTHONPATH": os.pathsep.join([str(project / "functions" / package), str(project)])}
    return subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, check=False)


def clockless(project: Path, package: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run(project, package, sys.executable, "-m", "clockless_tools.cli", *args)


def checks_of_the_job(project: Path, package: str) -> None:
    """Its lint, types, the rules and its own tests, as `make test` runs them."""
    files = [
        f"functions/{package}/{package}",
        *(f"tests/unit/{p.name}" for p in (project / "tests/unit").glob(f"test_{package}_*.py")),
    ]
    for command in (
        [str(BIN / "ruff"), "check", "--no-cache", *files],
        [str(BIN / "ruff"), "format", "--check", "--no-cache", *files],
        # The whole project as pyproject.toml configures it: its globs must reach the new package.
        [str(BIN / "mypy"), "--cache-dir", str(project / ".mypy_cache")],
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *files[1:]],
    ):
        done = run(project, package, *command)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    arch = clockless(project, package, "arch", "-t", str(project / "template.yaml"))
    assert arch.returncode == 0, arch.stdout + arch.stderr


def simulates_its_tick_exactly_once(project: Path, name: str) -> dict[str, Any]:
    """A short simulation over the job's one 03:00 tick (the command's schedule): green, its seeded
    items applied exactly once. Returns the report."""
    names = JobNames.of(name)
    simulated = clockless(
        project, names.package, "simulate", "--json", "--template", str(project / "template.yaml"),
        "--from", "2026-11-27T02:00:00Z", "--to", "2026-11-27T04:00:00Z", "--tenants", "1",
    )  # fmt: skip
    report: dict[str, Any] = json.loads(simulated.stdout)
    assert simulated.returncode == 0, report["proved"]
    (job,) = [job for job in report["jobs"] if job["job"] == name]
    assert (job["ticks_expected"], job["exactly_once"], job["no_work"]) == (1, True, False)
    assert job["effects"][names.table_id]["updated"] > 0
    return report


def reports_its_bad_row_and_settles(project: Path, name: str, *, fans_out: bool) -> None:
    """The same tick on a night with bad rows (`--bad-rows`): the scaffold's demo plants its bad row,
    which is named in the ledger (and the work DLQ when it fans out); the tick settles, the good
    items still take effect exactly once."""
    names = JobNames.of(name)
    simulated = clockless(
        project, names.package, "simulate", "--json", "--template", str(project / "template.yaml"),
        "--from", "2026-11-27T02:00:00Z", "--to", "2026-11-27T04:00:00Z", "--tenants", "1", "--bad-rows",
    )  # fmt: skip
    report: dict[str, Any] = json.loads(simulated.stdout)
    assert simulated.returncode == 0, report["proved"]
    (job,) = [job for job in report["jobs"] if job["job"] == name]
    rows = job["bad_rows"]
    assert (job["exactly_once"], job["ticks_missed"], rows["problems"]) == (True, [], [])
    assert rows["planted"] == rows["in_ledger"] == ["tenant-bad#item-hour-25"]
    assert rows["in_dead_letters"] == (rows["planted"] if fans_out else [])
    assert rows["ticks_failed"] == 1


def test_a_fanned_out_job_made_by_the_command_is_green_and_simulates_exactly_once(project: Path) -> None:
    # Given a new fanned-out job made by the command
    made = clockless(
        project, "subscription_expiry", "new", "job", "subscription-expiry", "--fan-out", "--project", str(project)
    )
    assert made.returncode == 0, made.stderr
    # And a small domain filled in: an item applied is a subscription marked EXPIRED
    repository = project / "functions/subscription_expiry/subscription_expiry/repository.py"
    repository.write_text(
        repository.read_text(encoding="utf-8").replace('APPLIED: Final = "APPLIED"', 'APPLIED: Final = "EXPIRED"'),
        encoding="utf-8",
    )
    # And its sample events written, as the command says to
    events = clockless(project, "subscription_expiry", "events", "-t", str(project / "template.yaml"))
    assert events.returncode == 0, events.stderr

    # Then its checks are green
    checks_of_the_job(project, "subscription_expiry")
    # And a short simulation over its 03:00 tick applies its seeded items exactly once
    report = simulates_its_tick_exactly_once(project, "subscription-expiry")
    assert "subscription-expiry: 40 items" in report["seeded"]
    # And on a night with bad rows its demo plants one, reported where an operator looks
    reports_its_bad_row_and_settles(project, "subscription-expiry", fans_out=True)


def test_a_job_that_is_not_fanned_out_starts_green_too(project: Path) -> None:
    made = clockless(project, "nightly_digest", "new", "job", "nightly-digest", "--project", str(project))
    assert made.returncode == 0, made.stderr
    assert not (project / "functions/nightly_digest/nightly_digest/worker.py").exists()
    # And mypy and the import contracts reach its package with no pyproject.toml edit: plants are caught
    logic = project / "functions/nightly_digest/nightly_digest/logic.py"
    clean = logic.read_text(encoding="utf-8")
    logic.write_text(clean + '\nimport boto3  # noqa: E402\n\nWRONG: int = "a"\n', encoding="utf-8")
    typed = run(project, "nightly_digest", str(BIN / "mypy"), "--cache-dir", str(project / ".mypy_cache"))
    assert typed.returncode != 0
    assert "functions/nightly_digest/nightly_digest/logic.py" in typed.stdout, typed.stdout
    layered = clockless(project, "nightly_digest", "arch", "-t", str(project / "template.yaml"), "--rule", "layering")
    assert "nightly_digest.logic -> boto3" in layered.stdout, layered.stdout + layered.stderr
    logic.write_text(clean, encoding="utf-8")

    checks_of_the_job(project, "nightly_digest")
    # And a short simulation over its 03:00 tick applies its seeded items exactly once
    simulates_its_tick_exactly_once(project, "nightly-digest")
    reports_its_bad_row_and_settles(project, "nightly-digest", fans_out=False)


def test_a_15_minute_fanned_out_job_whose_items_move_to_the_next_tick_is_proved_with_a_note(project: Path) -> None:
    # Given the skeleton fanned out every 15 minutes (it applies everything due up to its tick)
    made = clockless(
        project, "order_sweep", "new", "job", "order-sweep", "--fan-out", "--schedule", "cron(0/15 * * * ? *)",
        "--project", str(project),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr

    # When an hour is simulated whose 02:15 tick meets every fault (seed 1): it fails twice, a late copy
    # lands after 02:30's run, and its workers lag (a slow night) so its partitions finish after 02:30's.
    # Only the new job is judged: the hour's one session-cleanup tick is dropped.
    simulated = clockless(
        project, "order_sweep", "simulate", "--json", "--template", str(project / "template.yaml"),
        "--from", "2026-11-27T02:00:00Z", "--to", "2026-11-27T03:00:00Z", "--tenants", "10", "--seed", "1",
        "--slow-night", "--drop", "session-cleanup@2026-11-27T02:00:00Z",
    )  # fmt: skip
    report: dict[str, Any] = json.loads(simulated.stdout)

    # Then the job is proved. Whether an item moves to 02:30 depends on where the seed's faults and
    # the shards' placement put it; where one moves, the counts are attributed elsewhere and noted.
    (job,) = [job for job in report["jobs"] if job["job"] == "order-sweep"]
    assert job["deliveries_by_kind"]["late"] >= 1
    assert job["differences"] == []
    assert job["exactly_once"] or job["counts_elsewhere"]
    assert simulated.returncode == 0, report["proved"]
    assert " took effect exactly once: " in report["proved"]
    moved = [note for note in report["notes"] if note.startswith("note: order-sweep: effects identical item by item")]
    assert len(moved) == (0 if job["exactly_once"] else 1)


def _whole_copy(tmp_path: Path) -> Path:
    """Every file git tracks, copied: the suites read the docs, the Makefile and the bench results too."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    root = tmp_path / "whole"
    for relative in filter(None, listed):
        source = PROJECT_ROOT / relative
        if source.is_file():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / relative)
    _with_mypy_cache(root)
    return root


def run_in_copy(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """As `make setup` would install the copy: its tools, kit and every function package first on the path."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ENDPOINT_URL", "PYTEST_"))}
    paths = [root / "tools", root / "layers" / "clockless", *sorted((root / "functions").iterdir()), root]
    env = {**inherited, "PYTHONPATH": os.pathsep.join(str(path) for path in paths)}
    return subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, check=False)


# Jobs a team adds at once, at the schedules teams write, a few mixes of them (each mix runs the whole
# suite in its copy, so a mix costs one `make test` in CI): the team (07:30 local in New York and
# Chicago as one LocalTime declaration, its cron at minute :30 of three UTC hours; every 10 and, the docs'
# example, every 15 minutes, fanned out); a zone at a local hour, every 5 minutes, weekdays (a weekly
# calendar, its longest gap 3 days: a once-a-week cron is refused, no dead-man alarm can look back 7 days
# plus a grace), a rate().
MIXES: Final = {
    "minute-30-every-10-and-15": (
        ["trial-expiry-notices", "--at", "07:30", "--zones", "America/New_York,America/Chicago"],
        ["stale-cart-purge", "--fan-out", "--schedule", "cron(0/10 * * * ? *)"],
        ["order-sweep", "--fan-out", "--schedule", "cron(0/15 * * * ? *)"],
    ),
    "zone-every-5-weekdays-rate": (
        ["nightly-digest", "--schedule", "cron(0 5 * * ? *)", "--zones", "Europe/Berlin",
         "--local-time", "not_before=06:00,same_local_date"],
        ["cache-warm", "--schedule", "cron(0/5 * * * ? *)"],
        ["weekday-report", "--fan-out", "--schedule", "cron(0 6 ? * MON-FRI *)"],
        ["quota-refresh", "--fan-out", "--schedule", "rate(20 minutes)"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_new_jobs_at_any_schedule_leave_the_whole_suite_green(tmp_path: Path, mix: str) -> None:
    root = _whole_copy(tmp_path)
    cli = [sys.executable, "-m", "clockless_tools.cli"]
    # Given the mix's jobs made by the command, each with its schedule's derived numbers
    for args in MIXES[mix]:
        made = run_in_copy(root, *cli, "new", "job", *args, "--project", str(root))
        assert made.returncode == 0, made.stdout + made.stderr
    # And `make docs`, as the command says to
    docs = run_in_copy(root, *cli, "docs")
    assert docs.returncode == 0, docs.stdout + docs.stderr

    # Then every suite and check `make test` runs passes in the copy, the project's tests and docs unedited
    for command in (
        [*cli, "arch", "-t", str(root / "template.yaml")],
        [*cli, "schedules", "check"],
        [*cli, "docs", "--check"],
        [str(BIN / "ruff"), "check", "--no-cache", "."],
        [str(BIN / "ruff"), "format", "--check", "--no-cache", "."],
        [str(BIN / "mypy"), "--cache-dir", str(root / ".mypy_cache")],
        [str(BIN / "cfn-lint"), "--append-rules", "cfn_lint_serverless.rules", "--", "template.yaml"],
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "-m", "not slow", "tests"],
    ):
        done = run_in_copy(root, *command)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
