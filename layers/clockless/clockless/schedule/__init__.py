"""When EventBridge Scheduler fires a schedule: the tick engine, in the layer so the deployed HTTP
trigger and the tools evaluate schedules with one implementation.

`expressions.ScheduleSpec` is the engine (cron, rate and at expressions with their zone and
bounds); `cron` parses and walks Scheduler's six-field cron. docs/schedules.md explains both and
docs/schedule-conformance.md checks them against AWS's pages.
"""
