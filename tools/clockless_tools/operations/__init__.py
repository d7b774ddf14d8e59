"""Operating scheduled jobs (`clockless status`, `backfill`, `run-now`): which ticks never
succeeded, and replaying them with a tick's exact semantics. `targets` is where they act, the
local runtime or a deployed stack through the same `JobTarget`, and builds a tick's event as the
scheduler delivers it; `status`, `backfill` and `run_now` are the commands' logic, named after
them.
"""
