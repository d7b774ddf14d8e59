"""Local-time rules for UTC schedules, checked over a year of ticks (`clockless schedules`).

Schedules in template.yaml fire in UTC; what a job needs is stated in the time zones it serves
("after 04:00 and on the same business date everywhere"). Each scheduled function declares both
in its resource `Metadata`, next to its schedule:

    WindowGenerationFunction:
      Type: AWS::Serverless::Function
      Metadata:
        clockless:
          operating_time_zones: !Ref OperatingTimeZones   # or a literal list of IANA zones
          local_time_rule: {not_before: "04:00", same_local_date: true}   # or: none

`rule` is the rule and its breaches; `declaration` reads what a function declares; `event` is a
schedule seen from its zones; `check` expands every schedule over one year from a start date (a
year always holds both DST transitions of every zone) and applies the rule to every tick in every
zone; `suggest` finds the UTC hours that satisfy the rule all year; `upcoming` lists the next
ticks (`schedules show`). Pure: it reads only the loaded template and the tz database.
"""
