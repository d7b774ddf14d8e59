"""clockless developer tools: the `clockless` CLI, the local runtime, the simulator, the bench."""

from clockless_tools.tzdb import use_pinned_tzdata

# Before anything computes a zone: the tools judge schedules with the database the layer ships.
use_pinned_tzdata()
