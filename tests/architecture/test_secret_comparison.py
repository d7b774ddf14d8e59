"""secret-comparison: an `==`, `!=` or `in` on a secret value anywhere in functions/ or layers/ is
caught, by name or by where the value came from; metadata about a secret and constant-time
comparisons are not."""

from __future__ import annotations

import pytest

from clockless_tools.architecture.secret_comparison import SECRET_COMPARISON, sensitive_name
from tests.architecture.planting import PlantedCopy, found

TRIGGER_SECRET = "functions/job_trigger/job_trigger/secret.py"
TRIGGER_MODULE = "functions/job_trigger/job_trigger/auth.py"
KIT_MODULE = "layers/clockless/clockless/auth.py"


@pytest.mark.parametrize(
    ("code", "line", "complaint"),
    [
        pytest.param(
            'def matches(presented: str, value: dict[str, str]) -> bool:\n    secret = value["current"]\n'
            "    return presented == secret\n",
            3,
            "compares with ==",
            id="name-says-secret",
        ),
        pytest.param(
            "from aws_lambda_powertools.utilities.parameters import get_secret\n\n\n"
            "def allowed(header: str) -> bool:\n"
            '    stored = get_secret("trigger", transform="json")\n'
            '    current = stored["current"]\n'
            "    return header == current\n",
            7,
            "compares with ==",
            id="value-from-get-secret",
        ),
        pytest.param(
            "def refuse(request: object, expected: str) -> None:\n"
            "    if request.token != expected:  # type: ignore[attr-defined]\n"
            '        raise PermissionError("no")\n',
            2,
            "compares with !=",
            id="attribute-token",
        ),
        pytest.param(
            'def verify(body: dict[str, str], computed: str) -> bool:\n    return body["signature"] == computed\n',
            2,
            "compares with ==",
            id="key-signature",
        ),
        pytest.param(
            'def verify(body: dict[str, str], computed: str) -> bool:\n    return computed == body.get("Signature")\n',
            2,
            "compares with ==",
            id="get-signature",
        ),
        pytest.param(
            "import boto3\n\n\ndef allowed(header: str) -> bool:\n"
            '    ssm = boto3.client("ssm")\n'
            '    value = ssm.get_parameter(Name="/trigger", WithDecryption=True)["Parameter"]["Value"]\n'
            "    return value == header\n",
            7,
            "compares with ==",
            id="decrypted-parameter",
        ),
        pytest.param(
            "def allowed(presented: str, current_secret: str, previous_secret: str) -> bool:\n"
            "    return presented in (current_secret, previous_secret)\n",
            2,
            "tests membership with in",
            id="membership",
        ),
        pytest.param(
            "class Login:\n    stored = 'x'\n\n    def check(self, password: str) -> bool:\n"
            "        return password == self.stored\n",
            5,
            "compares with ==",
            id="method-parameter",
        ),
        pytest.param(
            'EXPECTED = "x"\ncheck = lambda api_token: api_token == EXPECTED  # noqa: E731\n',
            2,
            "compares with ==",
            id="lambda",
        ),
        pytest.param(
            "import hashlib\n\n\ndef allowed(presented_secret: str, stored: bytes) -> bool:\n"
            "    digest = hashlib.sha256(presented_secret.encode()).digest()\n"
            "    return digest == stored\n",
            6,
            "compares with ==",
            id="digest-of-a-secret-with-equals",
        ),
    ],
)
@pytest.mark.parametrize(
    "where", [(TRIGGER_MODULE, "JobTriggerFunction"), (KIT_MODULE, "ClocklessLayer")], ids=["fn", "layer"]
)
def test_an_equality_on_a_secret_is_caught(
    planted: PlantedCopy, code: str, line: int, complaint: str, where: tuple[str, str]
) -> None:
    # Given a module of a function (or of the layer) that compares a secret value directly
    module, owner = where
    planted.write(module, code)

    # When secret-comparison checks the copy
    violations = planted.violations(SECRET_COMPARISON)

    # Then it names the file, the resource that ships it, the line and the constant-time fix
    violation = found(violations, file=module, resource=owner, containing=complaint)
    assert violation.line == line
    assert "hmac.compare_digest" in violation.fix


def test_the_triggers_own_check_is_caught_once_it_uses_equality(planted: PlantedCopy) -> None:
    # Given the trigger's constant-time comparison replaced by ==
    planted.replace(
        TRIGGER_SECRET,
        "matches_current = hmac.compare_digest(digest, self.current_digest)",
        "matches_current = digest == self.current_digest",
    )

    # When / Then
    found(planted.violations(SECRET_COMPARISON), file=TRIGGER_SECRET, resource="JobTriggerFunction", containing="==")


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            "import hmac\n\n\ndef allowed(presented_secret: bytes, stored_secret: bytes) -> bool:\n"
            "    return hmac.compare_digest(presented_secret, stored_secret)\n",
            id="compare-digest",
        ),
        pytest.param("def same(secret_id: str, other: str) -> bool:\n    return secret_id == other\n", id="secret-id"),
        pytest.param("SECRET_HEADER = 'x-secret'\nIS_DEFAULT = SECRET_HEADER != 'x-clockless-secret'\n", id="header"),
        pytest.param("def empty(secret: str) -> bool:\n    return len(secret) == 0\n", id="length"),
        pytest.param("def unset(token: str | None) -> bool:\n    return token is None\n", id="is-none"),
        pytest.param(
            '"""Never write `secret == presented`."""\n\n# if token == header: ...\nNOTE = "password == x"\n',
            id="only-text",
        ),
        pytest.param(
            "def ok(status: int, secret: str) -> bool:\n    return status == 200 and bool(secret)\n",
            id="other-operand-of-and",
        ),
    ],
)
def test_what_is_not_an_equality_on_a_secret_passes(planted: PlantedCopy, code: str) -> None:
    # Given a module that handles secrets without comparing their values with ==
    planted.write(TRIGGER_MODULE, code)

    # When / Then
    assert planted.violations(SECRET_COMPARISON) == []


@pytest.mark.parametrize(
    ("identifier", "sensitive"),
    [
        ("secret", True),
        ("presented_secret", True),
        ("apiToken", True),
        ("get_secret_value", True),
        ("SecretString", True),
        ("DB_PASSWORD", True),
        ("webhook_signature", True),
        ("secret_id", False),
        ("SECRET_HEADER", False),
        ("TRIGGER_SECRET_MAX_AGE_SECONDS", False),
        ("secrets_client", False),
        ("SecretId", False),
        ("digest", False),
        ("secretary", False),
    ],
)
def test_which_names_are_secret_values(identifier: str, sensitive: bool) -> None:
    assert sensitive_name(identifier) is sensitive
