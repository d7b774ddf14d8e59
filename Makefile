# clockless: `make run` runs the jobs on the embedded local DynamoDB; `make test` passes the tests.
# Both bootstrap what they need (a Python 3.13 venv with pinned dependencies) on a fresh machine.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV      := .venv
SAM_VENV  := .venv-sam
PY        := $(VENV)/bin/python
CLOCKLESS := $(VENV)/bin/clockless
SAM       := $(SAM_VENV)/bin/sam
SAM_CLI_VERSION := 1.170.0
STAMP     := $(VENV)/.installed
SAM_STAMP := $(SAM_VENV)/.installed-$(SAM_CLI_VERSION)
REGION    ?= us-east-1
PYTEST    := $(PY) -m pytest -q -p no:cacheprovider

export SAM_CLI_TELEMETRY := 0
# `sam build` needs python3.13 on PATH; the venv provides it.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help setup test unit integration arch lint typecheck cfn-lint run events invoke local-up local-down \
        build deploy bench docs clean sam status backfill run-now

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# The venv is made once; later changes to the pins re-sync it in place.
$(STAMP): pyproject.toml layers/clockless/requirements.txt
	@test -x $(PY) || { PY313="$$(tools/find-python313)" && echo "creating $(VENV) with $$PY313" && \
	  "$$PY313" -m venv $(VENV); }
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

$(SAM_STAMP): | $(STAMP)
	@PY313="$$(tools/find-python313)"; "$$PY313" -m venv --clear $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli==$(SAM_CLI_VERSION)
	@# One PATH entry for both commands: `. .venv/bin/activate` puts clockless and sam on PATH.
	ln -sf ../../$(SAM_VENV)/bin/sam $(VENV)/bin/sam
	@touch $@

setup: $(STAMP) ## Create the venv (Python 3.13, pinned dependencies)

test: unit integration arch lint ## Every suite: unit, integration, architecture, lint and types

unit: $(STAMP) ## Unit tests (no sockets)
	$(PYTEST) tests/unit

integration: $(STAMP) ## Integration tests against moto's server over HTTP
	$(PYTEST) tests/integration

arch: $(STAMP) ## Architecture rules over template.yaml and the code, each proven by a planted violation
	$(PYTEST) tests/architecture

lint: $(STAMP) cfn-lint typecheck ## ruff, mypy, cfn-lint (with the serverless rules)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP) ## mypy (strict) over the code and the tests
	$(VENV)/bin/mypy

cfn-lint: $(STAMP) ## cfn-lint over template.yaml, with the serverless rules
	$(VENV)/bin/cfn-lint template.yaml
	$(VENV)/bin/cfn-lint --append-rules cfn_lint_serverless.rules -- template.yaml

FROM ?=
TO   ?=
run: $(STAMP) ## Simulate every schedule on an embedded DynamoDB (last 48 h, or FROM=... TO=... in UTC); effects checked
	$(CLOCKLESS) simulate $(if $(FROM),--from "$(FROM)") $(if $(TO),--to "$(TO)")

events: $(STAMP) ## Write events/<function>/*.json from the schedules' Input
	$(CLOCKLESS) events

FN    ?=
EVENT ?=
invoke: $(STAMP) ## Invoke a function without Docker: make invoke FN=<LogicalId> EVENT=<file>
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<LogicalId> EVENT=<event file>" >&2; exit 2; }
	$(CLOCKLESS) invoke "$(FN)" -e "$(EVENT)"

local-up: $(STAMP) ## Start the embedded DynamoDB in the background (in memory, until local-down) with the template's tables
	$(CLOCKLESS) local up

local-down: $(STAMP) ## Stop the embedded DynamoDB started by local-up
	$(CLOCKLESS) local down

sam: $(SAM_STAMP) ## Install the SAM CLI in its own venv, linked as .venv/bin/sam
	@echo "sam is $(SAM); \`. .venv/bin/activate\` puts it and clockless on PATH"

# The operating commands on the running `make local-up`, or a deployed stack with STACK=<name>.
STACK ?=
JOB   ?=
POLICY ?= all
OPERATE_ON = $(if $(STACK),--stack "$(STACK)")
status: $(STAMP) ## Each job's last success, failure and missed ticks (STACK=<name> for a deployed stack)
	$(CLOCKLESS) status $(OPERATE_ON)

backfill: $(STAMP) ## Replay missed ticks: make backfill JOB=<job> FROM=<UTC> TO=<UTC> [POLICY=latest] [STACK=<name>]
	@test -n "$(JOB)" -a -n "$(FROM)" -a -n "$(TO)" || { echo "usage: make backfill JOB=<job> FROM=<UTC time> TO=<UTC time> [POLICY=all|latest|skip] [STACK=<name>]" >&2; exit 2; }
	$(CLOCKLESS) backfill "$(JOB)" --from "$(FROM)" --to "$(TO)" --policy "$(POLICY)" $(OPERATE_ON)

run-now: $(STAMP) ## One manual tick: make run-now JOB=<job> [STACK=<name>]
	@test -n "$(JOB)" || { echo "usage: make run-now JOB=<job> [STACK=<name>]" >&2; exit 2; }
	$(CLOCKLESS) run-now "$(JOB)" $(OPERATE_ON)

build: $(SAM_STAMP) ## sam validate --lint and sam build
	$(SAM) validate --lint --region $(REGION)
	$(SAM) build --parallel

deploy: build ## sam deploy with samconfig.toml (needs AWS credentials)
	$(SAM) deploy

bench: $(STAMP) $(SAM_STAMP) ## Measure a tick's cost beside baselines (a few minutes): bench/results.json
	$(CLOCKLESS) bench run --sam $(SAM) --output bench/results.json

docs: $(STAMP) ## Rewrite the generated tables in README.md and docs/ (rules, bench figures); make test checks them
	$(CLOCKLESS) docs

clean: ## Remove the venvs, build output and local state
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .clockless .pytest_cache .mypy_cache .ruff_cache bench/*.tmp
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
