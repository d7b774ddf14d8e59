"""The `clockless` command. `app` composes one Typer app per command group, each in a module named
after what users type: `simulate`, `invoke`, `events` and `local` (run locally), `operations`
(`status`, `backfill`, `run-now`), `arch` and `schedules` (check), `bench` (measure). `common`
holds what they share: the consoles, `fail` for bad input, the template option and time parsing.
This is the top layer of the tools: nothing imports it.
"""
