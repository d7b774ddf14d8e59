"""AWS without an account and without Docker, for `make run`, the tests and `clockless invoke`.
`dynamodb` is the embedded DynamoDB (moto's server on loopback, in this process or as
`python -m clockless_tools.local.dynamodb`; it serves SQS too) and the template's tables on it;
`queues` creates the template's SQS queues there (RedrivePolicy resolved); `services` provisions
the rest (queues, secrets with known local values, moto's Lambda accepting asynchronous invokes);
`event_sources` reads the template's SQS event source mappings and Lambda's contract for their
events and answers; `poller` drains them into their functions in this process, as Lambda's
poller does;
`server` starts and stops the background one behind `clockless local up`; `runtime` invokes a
function's handler the way Lambda does, with the environment the template sets; `seed` loads demo
data; `botocore_hooks` watches every request the SDK sends (to count it, or to inject a fault
after its response).
"""
