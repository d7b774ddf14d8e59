"""The tick-reaper job: every fanned-out tick left unsettled past its bound settled `failed`,
naming its partitions not done (clockless.reaper)."""
