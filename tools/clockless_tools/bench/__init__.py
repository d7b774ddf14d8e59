"""`make bench` / `clockless bench run`: what a scheduled tick costs, each figure beside a baseline
measured in the same run, written to bench/results.json (`results`). `read_units` meters every
DynamoDB request of an action; `moto_patches` makes moto's server fit to measure; `workloads` lays
out the data a tick works on and `harness` runs a tick with and without the kit. The measurements:
`overhead` (1. the kit's added requests and time), `scale` (2. cost as the table grows), `throughput`
(3. windows per second, as built against a naive loop), `cold_start` (4. handler import time in a
fresh interpreter, via `probe.py`) and `artifacts` (5. what `sam build` produces). `run` does them
all in one process. Every measured tick goes over HTTP to moto's server on loopback; results are
keyed by `Figure.key`, stable from run to run, so two results files can be compared.
"""
