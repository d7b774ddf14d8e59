"""AWS without an account and without Docker, for `make run`, the tests and `clockless invoke`.
`dynamodb` is the embedded DynamoDB (moto's server on loopback, in this process or as
`python -m clockless_tools.local.dynamodb`) and the template's tables on it; `services` provisions
the rest (secrets with known local values, moto's Lambda accepting asynchronous invokes);
`server` starts and stops the background one behind `clockless local up`; `runtime` invokes a
function's handler the way Lambda does, with the environment the template sets; `seed` loads demo
data; `botocore_hooks` watches every request the SDK sends (to count it, or to inject a fault
after its response).
"""
