"""Rule `conditional-writes`: an unconditional update, delete, put and transaction action planted in
any job's repository is caught, each in the spellings PynamoDB and boto3 give it; a batch write the
job's code calls is caught; the same writes with their conditions, `dict.update` and the demo seed's
batch path pass. Plants go into the repository of every job the template declares."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from clockless_tools.architecture import Project
from clockless_tools.architecture.conditional_writes import CONDITIONAL_WRITES
from tests.architecture.planting import PROJECT_ROOT, PlantedCopy, found

PROJECT = Project.at(PROJECT_ROOT)


def _package(function_id: str) -> Path:
    path = PROJECT.handler_location(PROJECT.template.function(function_id)).path
    assert path is not None, function_id
    return Path(PROJECT.relative(path)).parent


# Every job whose code has a repository of its own to write from (each `clockless new job` makes;
# tick-reaper's writes are the kit's, clockless.reaper).
SCHEDULED = sorted(
    f for f in PROJECT.template.scheduled_functions if (PROJECT_ROOT / _package(f) / "repository.py").exists()
)
FIRST = SCHEDULED[0]

# (what is planted, how the violation names it)
UNCONDITIONAL = [
    ("    model.update(actions=[model.status.set('DONE')])\n", "update() without a condition"),
    ("    transaction.update(model, actions=[])\n", "update() without a condition"),
    ("    model.delete()\n", "delete() without a condition"),
    ("    transaction.delete(model)\n", "delete() without a condition"),
    ("    model.save()\n", "save() without a condition"),
    ("    client.put_item(TableName='t', Item={})\n", "put_item() without a condition"),
    ("    client.update_item(TableName='t', Key={}, UpdateExpression='SET a = :a')\n", "update_item()"),
    ("    client.delete_item(TableName='t', Key={}, condition=None)\n", "delete_item()"),
    ("    actions.append({'Update': model.get_update_kwargs_from_instance(actions=[])})\n", "a transaction Update"),
    ("    actions.append({'Put': model.get_save_kwargs_from_instance()})\n", "a transaction Put"),
    ("    actions.append({'Delete': model.get_delete_kwargs_from_instance()})\n", "a transaction Delete"),
    ("    actions.append({'Put': {'TableName': 't', 'Item': {}}})\n", "a transaction Put without a condition"),
]
CONDITIONAL = [
    "    model.update(actions=[model.status.set('DONE')], condition=model.status.does_not_exist())\n",
    "    transaction.update(model, actions=[], condition=model.status.exists())\n",
    "    model.delete(condition=model.status.exists())\n",
    "    model.save(condition=model.status.does_not_exist())\n",
    "    client.put_item(TableName='t', Item={}, ConditionExpression='attribute_not_exists(pk)')\n",
    "    client.delete_item(**{'TableName': 't', 'Key': {}, 'ConditionExpression': 'attribute_exists(pk)'})\n",
    "    actions.append({'Delete': model.get_delete_kwargs_from_instance(condition=model.status.exists())})\n",
    "    actions.append({'Put': {'TableName': 't', 'Item': {}, 'ConditionExpression': 'attribute_not_exists(pk)'}})\n",
    # Not writes: a dict's update, a set's.
    "    seen.update(other)\n",
    "    totals.update({'applied': 1})\n",
]
HEAD = (
    "\n\ndef _planted(\n    model: Any, transaction: Any, client: Any, actions: Any,\n"
    "    seen: Any, other: Any, totals: Any,\n) -> None:\n"
)


def test_the_template_holds_it(planted: PlantedCopy) -> None:
    assert planted.violations(CONDITIONAL_WRITES) == []


def test_each_unconditional_write_is_caught(planted: PlantedCopy) -> None:
    # Given a repository with each spelling of a write without a condition, one per function
    repository = (_package(FIRST) / "repository.py").as_posix()
    planted.append(
        repository, "".join(HEAD.replace("_planted", f"_planted_{n}") + w for n, (w, _) in enumerate(UNCONDITIONAL))
    )

    # Then the rule finds every one, at its line
    violations = planted.violations(CONDITIONAL_WRITES)
    owner = PROJECT.source(PROJECT_ROOT / repository).owner
    text = (planted.root / repository).read_text(encoding="utf-8").splitlines()
    for number, (write, named) in enumerate(UNCONDITIONAL):
        violation = found(violations, file=repository, resource=owner, containing=f"._planted_{number} makes {named}")
        assert violation.line is not None
        assert text[violation.line - 1].strip() in write
    assert len(violations) == len(UNCONDITIONAL)


@pytest.mark.parametrize("function_id", SCHEDULED)
def test_an_unconditional_update_in_any_jobs_repository_is_caught(planted: PlantedCopy, function_id: str) -> None:
    write, named = UNCONDITIONAL[0]
    _caught(planted, function_id, write, named)


def _caught(planted: PlantedCopy, function_id: str, write: str, named: str) -> None:
    # Given a repository with one write that carries no condition
    repository = (_package(function_id) / "repository.py").as_posix()
    planted.append(repository, HEAD + write)

    # Then the rule names the file, the function, the line and the fix
    owner = PROJECT.source(PROJECT_ROOT / repository).owner
    violation = found(planted.violations(CONDITIONAL_WRITES), file=repository, resource=owner, containing=named)
    assert "._planted" in violation.message
    assert violation.line is not None
    text = (planted.root / repository).read_text(encoding="utf-8").splitlines()
    assert text[violation.line - 1].strip() in write
    assert "condition=" in violation.fix


def test_the_same_writes_with_their_conditions_pass(planted: PlantedCopy) -> None:
    repository = (_package(FIRST) / "repository.py").as_posix()
    planted.append(repository, HEAD + "".join(CONDITIONAL))

    assert planted.violations(CONDITIONAL_WRITES) == []


def test_a_batch_write_the_jobs_code_calls_is_caught_and_one_only_the_seed_calls_passes(planted: PlantedCopy) -> None:
    package = _package(FIRST)
    repository, handler = (package / "repository.py").as_posix(), (package / "handler.py").as_posix()
    planted.append(
        repository,
        "\n\ndef bulk_apply(model: Any, items: Any) -> None:\n"
        "    with model.batch_write() as batch:\n        for item in items:\n            batch.save(item)\n",
    )
    # Only the seed's path (nothing but demo.py would call it): allowed
    assert planted.violations(CONDITIONAL_WRITES) == []

    # When the job's handler calls it
    planted.append(handler, "\n\ndef _replay(model: Any) -> None:\n    bulk_apply(model, [])\n")

    owner = PROJECT.source(PROJECT_ROOT / repository).owner
    violations = planted.violations(CONDITIONAL_WRITES)
    violation = found(violations, file=repository, resource=owner, containing="a batch write (batch_write)")
    assert "handler:" in violation.message
    assert "demo seed" in violation.fix


# Conditions that hold whatever the item, so a second delivery applies the write again.
ALWAYS_TRUE = [
    ("    model.update(actions=[], condition=True)\n", "the literal True"),
    (
        "    client.put_item(TableName='t', Item={}, "
        "ConditionExpression='attribute_exists(pk) OR attribute_not_exists(pk)')\n",
        "holds for any item",
    ),
    ("    model.save(condition=model.status.exists() | model.status.does_not_exist())\n", "model.status.exists() |"),
    (
        "    transaction.update(model, actions=[], condition=Or(model.a.does_not_exist(), model.a.exists()))\n",
        "model.a.exists() |",
    ),
    (
        "    actions.append({'Put': {'TableName': 't', 'Item': {}, "
        "'ConditionExpression': 'attribute_not_exists(#k) or attribute_exists(#k)'}})\n",
        "holds for any item",
    ),
    ("    model.delete(condition=_PLANTED_ANY)\n", "model.done.exists() |"),
]


def test_each_condition_that_cannot_fail_is_caught(planted: PlantedCopy) -> None:
    # Given writes whose conditions hold for any item (through a module constant too), in functions nothing calls
    repository = (_package(FIRST) / "repository.py").as_posix()
    planted.append(
        repository,
        "\n\n_PLANTED_ANY = model.done.exists() | model.done.does_not_exist()\n"
        + "".join(HEAD.replace("_planted", f"_planted_{n}") + w for n, (w, _) in enumerate(ALWAYS_TRUE)),
    )

    # Then each is a write without a condition, at its line, with what makes it hold
    violations = planted.violations(CONDITIONAL_WRITES)
    owner = PROJECT.source(PROJECT_ROOT / repository).owner
    text = (planted.root / repository).read_text(encoding="utf-8").splitlines()
    for number, (write, why) in enumerate(ALWAYS_TRUE):
        violation = found(violations, file=repository, resource=owner, containing=f"._planted_{number} makes ")
        assert "cannot fail once it applied" in violation.message
        assert why in violation.message
        assert violation.line is not None
        assert text[violation.line - 1].strip() in write
    assert len(violations) == len(ALWAYS_TRUE)


def _model_and_key(repository: Path) -> tuple[str, str]:
    """The first PynamoDB model the repository declares and its hash key's attribute."""
    tree = ast.parse(repository.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and not any(isinstance(base, ast.Subscript) for base in node.bases):
            for statement in node.body:
                if isinstance(statement, ast.Assign) and "hash_key=True" in ast.unparse(statement.value):
                    target = statement.targets[0]
                    assert isinstance(target, ast.Name)
                    return node.name, target.id
    raise AssertionError(f"{repository}: no model with a hash key")


@pytest.mark.parametrize("function_id", SCHEDULED)
def test_an_update_conditioned_on_its_own_key_is_caught_where_the_job_calls_it(
    planted: PlantedCopy, function_id: str
) -> None:
    # Given an update whose only condition is that the item has its own key (a written item always has)
    package = _package(function_id)
    repository, handler = (package / "repository.py").as_posix(), (package / "handler.py").as_posix()
    model, key = _model_and_key(PROJECT_ROOT / repository)
    planted.append(
        repository,
        f"\n\ndef touch(item: Any) -> None:\n    item.update(actions=[], condition={model}.{key}.exists())\n\n\n"
        f"def drop(item: Any) -> None:\n    item.delete(condition={model}.{key}.exists())\n\n\n"
        f"def mark(item: Any) -> None:\n"
        f"    item.update(actions=[], condition=And({model}.{key}.exists(), {model}.x == 1))\n",
    )
    # Only the seed's path (nothing in the job calls it): a platform write that must not create a row
    assert planted.violations(CONDITIONAL_WRITES) == []

    # When the job's handler calls all three
    planted.append(handler, "\n\ndef _apply(item: Any) -> None:\n    touch(item)\n    drop(item)\n    mark(item)\n")

    # Then the update is caught; the delete (which the key's absence does fail) and the And pass
    owner = PROJECT.source(PROJECT_ROOT / repository).owner
    violations = planted.violations(CONDITIONAL_WRITES)
    violation = found(violations, file=repository, resource=owner, containing=f"own key {model}.{key}")
    assert ".touch makes update()" in violation.message
    assert "handler:" in violation.message
    assert len(violations) == 1
