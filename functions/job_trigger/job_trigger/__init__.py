"""Run a job's tick now over HTTP, with exactly the semantics of a scheduled tick."""
