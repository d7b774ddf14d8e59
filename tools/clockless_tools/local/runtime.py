"""A Docker-free twin of `sam local invoke`: the function's CodeUri and layers on the import path,
its environment from template.yaml resolved to the local tables, and a Lambda context with its
timeout and memory."""

from __future__ import annotations

import contextlib
import importlib
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from clockless_tools.local.dynamodb import local_environment, patched_environ
from clockless_tools.template.intrinsics import LocalNames, resolve
from clockless_tools.template.loader import TemplateError
from clockless_tools.template.model import Template


@dataclass
class LocalLambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int
    timeout_seconds: int
    invoked_function_arn: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds
        self.log_group_name = f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class LocalLambdaRuntime:
    def __init__(self, template: Template, endpoint: str, names: LocalNames = LocalNames()) -> None:
        self.template = template
        self.endpoint = endpoint
        self.names = names
        self._handlers: dict[str, Callable[[Any, Any], Any]] = {}

    def environment(self, logical_id: str) -> dict[str, str]:
        fn = self.template.function(logical_id)
        env = {name: str(resolve(value, self.template, self.names)) for name, value in fn.environment.items()}
        env.update(local_environment(self.endpoint))
        env.update(
            {
                "AWS_LAMBDA_FUNCTION_NAME": f"{self.names.stack_name}-{logical_id}",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_size),
                "AWS_LAMBDA_FUNCTION_TIMEOUT": str(fn.timeout),
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            }
        )
        return env

    def context(self, logical_id: str) -> LocalLambdaContext:
        fn = self.template.function(logical_id)
        name = f"{self.names.stack_name}-{logical_id}"
        return LocalLambdaContext(
            function_name=name,
            memory_limit_in_mb=fn.memory_size,
            timeout_seconds=fn.timeout,
            invoked_function_arn=f"arn:aws:lambda:{self.names.region}:{self.names.account_id}:function:{name}",
        )

    def handler(self, logical_id: str) -> Callable[[Any, Any], Any]:
        if logical_id not in self._handlers:
            fn = self.template.function(logical_id)
            paths = [self.template.root / fn.code_uri]
            for layer in fn.layers:
                content_uri = self.template.layer_content_uri(layer)
                if content_uri is not None:
                    paths.append(self.template.root / content_uri)
            for path in reversed(paths):
                if str(path) not in sys.path:
                    sys.path.insert(0, str(path))
            module_name, _, attribute = fn.handler.rpartition(".")
            if not module_name:
                raise TemplateError(f"{logical_id}: Handler {fn.handler!r} is not module.function")
            module = importlib.import_module(module_name)
            self._handlers[logical_id] = getattr(module, attribute)
        return self._handlers[logical_id]

    @contextlib.contextmanager
    def function_environment(self, logical_id: str) -> Iterator[None]:
        """The function's environment for everything run inside, including concurrent deliveries."""
        with patched_environ(self.environment(logical_id)):
            self.handler(logical_id)
            yield

    def call(self, logical_id: str, event: Any) -> Any:
        """Invoke inside `function_environment`; a fresh context per call, as Lambda gives."""
        return self.handler(logical_id)(event, self.context(logical_id))

    def invoke(self, logical_id: str, event: Any) -> Any:
        with self.function_environment(logical_id):
            return self.call(logical_id, event)
