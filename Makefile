# clockless: `make run` runs the jobs on the embedded local DynamoDB; `make test` passes the tests.
# Both bootstrap what they need on a fresh machine: uv (from PyPI, hash-checked, into .uv), then a
# Python 3.13 venv synced from uv.lock, which pins the whole closure with hashes.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV      := .venv
SAM_VENV  := .venv-sam
CHECKOV_VENV := .venv-checkov
UV_BOOT   := .uv
UV        := $(UV_BOOT)/bin/uv
PY        := $(VENV)/bin/python
CLOCKLESS := $(VENV)/bin/clockless
# The commands a target runs with the user's make variables: their errors say STACK=, not --stack.
CLOCKLESS_FOR_MAKE := CLOCKLESS_UNDER_MAKE=1 $(CLOCKLESS)
SAM       := $(SAM_VENV)/bin/sam
STAMP     := $(VENV)/.installed
SAM_STAMP := $(SAM_VENV)/.installed
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
REGION    ?= us-east-1
# -n: one worker per core (pytest-xdist); each integration worker starts its own moto server.
PYTEST    := $(PY) -m pytest -q -p no:cacheprovider -n $(or $(JOBS),auto) --dist loadgroup
# What the python3.13 Lambda runtime ships (boto3 and its dependencies), left out of the layer;
# the same set as clockless_tools.bench.cold_start.RUNTIME_PROVIDED (test_dependencies.py checks).
RUNTIME_SDK := boto3 botocore s3transfer jmespath python-dateutil six urllib3

export SAM_CLI_TELEMETRY := 0
# uv never downloads an interpreter: it is handed the 3.13 that tools/find-python313 finds.
export UV_PYTHON_DOWNLOADS := never
# The venvs are installed with their bytecode compiled: where PYTHONDONTWRITEBYTECODE is set (this
# kind of machine sets it), every interpreter `make test` and `make run` start (xdist workers, the
# CLI, each simulation's replays) would otherwise compile moto, botocore and Powertools from source
# again, about 0.5 s of CPU each.
export UV_COMPILE_BYTECODE := 1
# The project's own modules (tools, the kit, the functions, the tests and pytest's rewrite of them)
# are compiled once and cached beside their source, as on a machine that does not set it: else each
# interpreter (two xdist workers, every CLI, replay and server process a test starts) compiles them
# again, 0.3 s of CPU for a CLI and 2 s for a worker's test modules. SAM's builder and the layer's
# Makefile leave __pycache__ out of what they package.
export PYTHONDONTWRITEBYTECODE :=
export UV_PROJECT_ENVIRONMENT := $(VENV)
# Time zones from the pinned tzdata package (what the layer ships), never the system's database.
export PYTHONTZPATH :=
# `sam build` needs python3.13 (with pip, for the layer's Makefile) on PATH: the venv provides it.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# $(call quietly,COMMAND): COMMAND's output kept in a log and shown only when it fails (an install's
# package list buries what the target is for; a failure's log is what fixes it).
quietly = log="$$(mktemp)"; if { $(1); } >"$$log" 2>&1; then rm -f "$$log"; else code=$$?; cat "$$log" >&2; rm -f "$$log"; exit $$code; fi

.PHONY: help setup lock test test-slow suites unit integration arch lint typecheck cfn-lint security run events invoke local-up local-down \
        build deploy bench bench-model measure docs clean sam status backfill run-now new-job \
        engine engine-down runtime-image test-containers emulation

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# uv itself, from PyPI with its hashes checked, in a venv of its own (a few seconds).
$(UV): tools/uv-requirements.txt
	@PY313="$$(tools/find-python313)" && echo "bootstrapping uv into $(UV_BOOT) with $$PY313" && \
	  "$$PY313" -m venv --clear $(UV_BOOT)
	@$(call quietly,$(UV_BOOT)/bin/python -m pip install --disable-pip-version-check --no-deps --require-hashes \
	  -r tools/uv-requirements.txt)
	@touch $@

# The venv holds exactly uv.lock (--locked: a pyproject.toml edited without `make lock` fails here),
# and the packages setup.py finds: a new function's package reinstalls the project.
$(STAMP): pyproject.toml setup.py uv.lock $(UV) $(wildcard functions/*/*/__init__.py)
	@PY313="$$(tools/find-python313)" && echo "syncing $(VENV) with uv.lock on $$PY313" && \
	  ( $(call quietly,$(UV) sync --locked --extra dev --reinstall-package clockless --python "$$PY313") ) || \
	  { echo "error: uv sync failed (above); if uv.lock is behind pyproject.toml, run make lock and commit it" >&2; exit 1; }
	@touch $@

$(SAM_STAMP): tools/sam-requirements.txt $(UV) | $(STAMP)
	@PY313="$$(tools/find-python313)" && echo "installing SAM CLI into $(SAM_VENV) from tools/sam-requirements.txt" && \
	  $(UV) venv --quiet --allow-existing --python "$$PY313" $(SAM_VENV)
	@$(call quietly,$(UV) pip sync --python $(SAM_VENV)/bin/python --require-hashes tools/sam-requirements.txt)
	@# One PATH entry for both commands: `. .venv/bin/activate` puts clockless and sam on PATH.
	ln -sf ../../$(SAM_VENV)/bin/sam $(VENV)/bin/sam
	@touch $@

# checkov in a venv of its own: it pins boto3, networkx and packaging far from the dev environment's.
$(CHECKOV_STAMP): tools/checkov-requirements.txt $(UV) | $(STAMP)
	@PY313="$$(tools/find-python313)" && echo "installing checkov into $(CHECKOV_VENV) from tools/checkov-requirements.txt" && \
	  $(UV) venv --quiet --allow-existing --python "$$PY313" $(CHECKOV_VENV)
	$(UV) pip sync --quiet --python $(CHECKOV_VENV)/bin/python --require-hashes tools/checkov-requirements.txt
	@touch $@

# After editing a pin in pyproject.toml or tools/*.in: re-lock, and export what is locked from it.
lock: $(UV) ## Re-resolve uv.lock and write the layer's and tools' requirements from it (with hashes)
	$(UV) lock --python "$$(tools/find-python313)"
	{ echo "# Exported from uv.lock by \`make lock\`: the layer's whole runtime closure, pinned with hashes,"; \
	  echo "# minus what the python3.13 Lambda runtime ships ($(RUNTIME_SDK))."; \
	  echo "# Installed with --no-deps --require-hashes by this directory's Makefile. Do not edit by hand."; \
	  $(UV) export --frozen --no-dev --no-emit-project --no-header --no-annotate --format requirements-txt \
	    $(foreach p,$(RUNTIME_SDK),--no-emit-package $(p)); } > layers/clockless/requirements.txt
	$(UV) pip compile --quiet --universal --generate-hashes --python-version 3.13 \
	  tools/uv-requirements.in -o tools/uv-requirements.txt
	$(UV) pip compile --quiet --universal --generate-hashes --python-version 3.13 \
	  tools/sam-requirements.in -o tools/sam-requirements.txt
	$(UV) pip compile --quiet --universal --generate-hashes --python-version 3.13 \
	  tools/checkov-requirements.in -o tools/checkov-requirements.txt
	$(UV) pip compile --quiet --universal --generate-hashes --python-version 3.13 \
	  tools/runtime-image-requirements.in -o tools/runtime-image-requirements.txt

setup: $(STAMP) ## Create the venv (Python 3.13, synced from uv.lock)

# security first: it installs checkov, which the scan's planted-finding test then runs.
test: security suites lint ## The security scan, every suite (unit, integration, architecture) in parallel, then lint and types; not the slow tests

# The tests marked `slow` (exhaustive fault sweeps, whole-command runs: docs/development.md lists
# them) are left to CI, which runs `make test`, then `make test-slow`, then `make run FULL=1`.
suites: $(STAMP) ## unit, integration and architecture tests in one parallel run (no lint, no slow tests)
	$(PYTEST) -m "not slow" tests

test-slow: $(STAMP) $(SAM_STAMP) ## The tests marked slow (exhaustive sweeps, the docs' executed outputs, sam build of a job without fan-out), which CI runs
	$(PYTEST) -m "slow and not alone and not containers" tests
	$(PY) -m pytest -q -p no:cacheprovider -n 0 -m "slow and alone and not containers" tests

# The container tests: every function through SAM CLI in real containers on the embedded stack
# (tests/containers/), the HTTP trigger behind start-api, and the jobs `clockless new job` writes.
# The engine is yours when one answers, else the project's own dockerd, which is stopped
# afterwards whatever the tests did; nothing is pulled (a pull attempt fails them).
test-containers: runtime-image ## sam local invoke, start-lambda and start-api of every function (and of new jobs) on the embedded stack, in containers (brings up the engine and image, stops the engine after), which CI runs
	status=0; $(PY) -m pytest -q -p no:cacheprovider -n 0 -m containers tests || status=$$?; \
	  $(CLOCKLESS) engine down; exit $$status

unit: $(STAMP) ## Unit tests (no sockets)
	$(PYTEST) -m "not slow" tests/unit

integration: $(STAMP) ## Integration tests against moto's server over HTTP
	$(PYTEST) -m "not slow" tests/integration

arch: $(STAMP) ## Architecture rules over template.yaml and the code, each proven by a planted violation
	$(PYTEST) tests/architecture

lint: $(STAMP) cfn-lint typecheck ## ruff, mypy, cfn-lint (with the serverless rules)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP) ## mypy (strict) over the code and the tests
	$(VENV)/bin/mypy

# One run: cfn-lint's own rules with the serverless rules appended to them.
cfn-lint: $(STAMP) ## cfn-lint over template.yaml, with the serverless rules
	$(VENV)/bin/cfn-lint --append-rules cfn_lint_serverless.rules -- template.yaml

security: $(CHECKOV_STAMP) ## checkov over template.yaml: fails on a finding tools/checkov-skips.yaml does not explain
	$(CLOCKLESS) security --checkov $(CHECKOV_VENV)/bin/checkov

FROM ?=
TO   ?=
FULL ?=
run: $(STAMP) ## Simulate every schedule on an embedded DynamoDB (last 24 h; FULL=1: 48 h; or FROM=... TO=... in UTC; CAPACITY=cold|warm SCALE=N for DynamoDB's write limits; SLOW_NIGHT=1 [OVERLAP=skip|buffer|run-both]: workers lag, ticks overlap; BAD_ROWS=1: bad rows among the good); effects checked
	$(CLOCKLESS_FOR_MAKE) simulate $(if $(FULL),--full) $(if $(FROM),--from "$(FROM)") $(if $(TO),--to "$(TO)") $(if $(CAPACITY),--capacity $(CAPACITY)) $(if $(SCALE),--scale $(SCALE)) $(if $(SLOW_NIGHT),--slow-night) $(if $(OVERLAP),--overlap $(OVERLAP)) $(if $(BAD_ROWS),--bad-rows)

events: $(STAMP) ## Write events/<function>/*.json from the schedules' Input
	$(CLOCKLESS) events

NAME    ?=
FAN_OUT ?=
SCHEDULE ?=
ZONES   ?=
LOCAL_TIME ?=
new-job: $(STAMP) ## Start a job: make new-job NAME=<job-name> [FAN_OUT=1] [SCHEDULE='cron(...)' ZONES=... LOCAL_TIME=...] (package, tests, demo seed, table, wiring)
	@test -n "$(NAME)" || { echo "usage: make new-job NAME=<job-name, e.g. subscription-expiry> [FAN_OUT=1] [SCHEDULE='cron(0 5 * * ? *)'] [ZONES=Europe/Berlin] [LOCAL_TIME=not_before=06:00]" >&2; exit 2; }
	$(CLOCKLESS) new job "$(NAME)" $(if $(FAN_OUT),--fan-out) $(if $(SCHEDULE),--schedule "$(SCHEDULE)") $(if $(ZONES),--zones "$(ZONES)") $(if $(LOCAL_TIME),--local-time "$(LOCAL_TIME)")

FN    ?=
EVENT ?=
invoke: $(STAMP) ## Invoke a function without Docker: make invoke FN=<LogicalId> EVENT=<file>
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<LogicalId> EVENT=<event file>" >&2; exit 2; }
	$(CLOCKLESS_FOR_MAKE) invoke "$(FN)" -e "$(EVENT)"

PORT ?=
local-up: $(STAMP) ## Start the embedded DynamoDB in the background (in memory, until local-down) with the template's tables (PORT=8766 for another port)
	$(CLOCKLESS_FOR_MAKE) local up$(if $(PORT), --port "$(PORT)")

local-down: $(STAMP) ## Stop the embedded DynamoDB started by local-up
	$(CLOCKLESS) local down

# A container engine for `sam local`: yours where one answers (DOCKER_HOST, /var/run/docker.sock),
# else Debian's dockerd (docker.io, with debootstrap for the runtime image, installed by apt when
# missing; root) on a socket and data root of the project's own, until `make engine-down`.
ARCH ?=
engine: $(STAMP) ## Bring up a container engine for sam local: yours if one answers, else Debian's dockerd (apt-installed if missing, root) until make engine-down
	@need=""; \
	  if ! $(CLOCKLESS) engine status --json | grep -q '"docker_host": "'; then \
	    command -v dockerd >/dev/null && command -v docker >/dev/null || need="docker.io"; \
	  fi; \
	  command -v debootstrap >/dev/null || need="$$need debootstrap"; \
	  if [ -n "$$need" ]; then \
	    echo "installing Debian packages:$$need (apt)"; \
	    SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	    $(call quietly,$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$need); \
	  fi
	$(CLOCKLESS) engine up

engine-down: $(STAMP) ## Stop the project's dockerd started by make engine (your own Docker is left alone)
	$(CLOCKLESS) engine down

# The other architecture under qemu: Debian's qemu-user-static registered with binfmt_misc (root).
emulation: $(STAMP) ## Run arm64 programs here under qemu (apt-installs qemu-user-static, registers it with binfmt_misc; root), for make runtime-image ARCH=arm64
	@test -f /usr/lib/binfmt.d/qemu-aarch64.conf || { \
	  echo "installing Debian packages: qemu-user-static (apt)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $(call quietly,$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends qemu-user-static); }
	$(CLOCKLESS) engine emulation --architecture arm64

runtime-image: engine $(SAM_STAMP) ## The stand-in python3.13 Lambda runtime image on the engine (built once from Debian packages and tools/runtime-image-requirements.txt, cached; never pulled); ARCH=arm64|x86_64
	$(CLOCKLESS) engine image $(if $(ARCH),--architecture "$(ARCH)")

sam: $(SAM_STAMP) ## Install the SAM CLI in its own venv, linked as .venv/bin/sam
	@echo "sam is $(SAM); \`. .venv/bin/activate\` puts it and clockless on PATH"

# The operating commands on the running `make local-up`, or a deployed stack with STACK=<name>.
STACK ?=
JOB   ?=
POLICY ?= all
OPERATE_ON = $(if $(STACK),--stack "$(STACK)")
status: $(STAMP) ## Each job's last success, failure and missed ticks (STACK=<name> for a deployed stack)
	$(CLOCKLESS_FOR_MAKE) status $(OPERATE_ON)

backfill: $(STAMP) ## Replay missed ticks: make backfill JOB=<job> FROM=<UTC> TO=<UTC> [POLICY=latest] [STACK=<name>]
	@test -n "$(JOB)" -a -n "$(FROM)" -a -n "$(TO)" || { echo "usage: make backfill JOB=<job> FROM=<UTC time> TO=<UTC time> [POLICY=all|latest|skip] [STACK=<name>]" >&2; exit 2; }
	$(CLOCKLESS_FOR_MAKE) backfill "$(JOB)" --from "$(FROM)" --to "$(TO)" --policy "$(POLICY)" $(OPERATE_ON)

run-now: $(STAMP) ## One manual tick: make run-now JOB=<job> [STACK=<name>]
	@test -n "$(JOB)" || { echo "usage: make run-now JOB=<job> [STACK=<name>]" >&2; exit 2; }
	$(CLOCKLESS_FOR_MAKE) run-now "$(JOB)" $(OPERATE_ON)

build: $(SAM_STAMP) ## sam validate --lint and sam build
	$(SAM) validate --lint --region $(REGION)
	$(SAM) build --parallel

deploy: build ## sam deploy with samconfig.toml (needs AWS credentials); rate() StartDates set for now; a lowered shard count refused
	$(CLOCKLESS) shards check --before-deploy $(OPERATE_ON)
	overrides="$$($(CLOCKLESS) schedules start-dates)"; \
	  $(SAM) deploy $${overrides:+--parameter-overrides $$overrides}

ONLY ?=
bench: $(STAMP) $(SAM_STAMP) ## Measure a tick's cost beside baselines (minutes): bench/results.json; ONLY=cold_start for one part
	$(CLOCKLESS) bench run --sam $(SAM) --output bench/results.json $(foreach section,$(ONLY),--only $(section))

bench-model: $(STAMP) ## Only the night model and its check against the capacity emulator (minutes), merged into bench/results.json
	$(CLOCKLESS) bench run --only night --only capacity_check --merge --output bench/results.json

measure: $(STAMP) ## Time make run and make test (wall, CPU, tests, load) into bench/measured.json; then make docs
	$(CLOCKLESS) bench measure

docs: $(STAMP) ## Rewrite the generated tables in README.md and docs/ (rules, bench figures); make test checks them
	$(CLOCKLESS) docs

clean: ## Remove the venvs, build output and local state
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) $(UV_BOOT) .aws-sam .clockless .pytest_cache .mypy_cache .ruff_cache bench/*.tmp
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
