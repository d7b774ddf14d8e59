"""The developer tools behind the `clockless` command; never deployed. One package per question:

- `cli/`: the commands, one module per command group.
- `simulate/`: `make run`, every schedule replayed in simulated time with at-least-once delivery.
- `operations/`: `status`, `backfill`, `run-now`, locally or against a deployed stack.
- `architecture/`: the architecture rules, one module per rule id.
- `timezones/`: UTC schedules checked against the time zones the jobs serve.
- `bench/`: what a tick costs, each figure beside a baseline.
- `local/`: the embedded AWS services and the Docker-free Lambda runtime.
- `template/`: template.yaml read once, with its schedules and what the scheduler delivers.

Imports go down that list's layers (cli > simulate, operations, architecture, timezones, bench >
local > template); the `tools-layers` import-linter contract in pyproject.toml checks it.
"""
