"""template.yaml, read once for everything that runs or checks the jobs locally. `loader` reads the
YAML with CloudFormation's short-form tags, and `extensions` writes out `AWS::LanguageExtensions`
(each job's `Fn::ForEach` loop) as CloudFormation does; `render` writes a template back as YAML;
`model` is the template's functions, schedules, tables and queues; `intrinsics` resolves `Ref`,
`GetAtt`, `Sub` and `Join` to local names; `expressions`
is the tick engine (cron, rate and at, in the schedule's zone, between its start and end dates);
`scheduler_support` is the table of what clockless takes from EventBridge Scheduler
(docs/schedules.md); `events` is what the scheduler delivers, the payload of each attempt and the
sample events in events/. This is the bottom layer of the tools: it imports nothing else of them.
"""
