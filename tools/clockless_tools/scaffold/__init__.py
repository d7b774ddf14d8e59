"""`clockless new job`: a job's package, tests, demo seed and wiring written from one name, like
`sam init` for a job. `names.py` spells the name every way the project needs it, `package/` (a
module per file written) and `tests.py` hold what is written, `wiring.py` edits the project lists,
`new_job.py` puts it together."""
