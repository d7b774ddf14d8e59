"""Operating scheduled jobs (`clockless status`, `backfill`, `run-now`, `pause`, `resume`, `drift`):
which ticks never succeeded, replaying them with a tick's exact semantics, pausing a schedule, and
comparing the deployed schedules with the template. `targets` is where they act, the local runtime
or a deployed stack through the same `JobTarget`, and builds a tick's event as the scheduler
delivers it; `connection` reaches the target (samconfig.toml, credentials, endpoints) and turns each
failure into one line; `status`, `backfill`, `run_now`, `pause`, `drift` and `grid` are the
commands' logic, named after them; `spans` formats a span of time.
"""
