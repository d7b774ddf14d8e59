"""`clockless simulate` (`make run`): every schedule in template.yaml replayed over a time range in
simulated time, each tick delivered at least once the way production does it, and judged by its
effects. `request` is what is asked (range, seed, dropped ticks); `plan` plans each tick's
deliveries (duplicates, concurrent copies, failures and retries, late deliveries); `engine`
delivers them; `workers` drains the fanned-out ticks' work queues into their workers (SQS event
source mappings, in simulated time) with worker faults; `faults` injects failures into the
functions' requests; `replay` is one replay in a process of its own; `run` runs the simulation
and a reference replay that delivers each tick exactly once;
`snapshot` dumps and compares tables; `report` is what was found (`fanout`: the workers, and each
fanned-out tick's ledger against the reference's). The final tables of the two
replays are compared item by item, bookkeeping tables (Metadata `clockless: {kind: idempotency |
ledger}`) aside: any difference is an effect the extra deliveries duplicated or lost.
"""
