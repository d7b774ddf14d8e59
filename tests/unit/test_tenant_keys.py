"""clockless.dynamo's bucketed tenant keys: one tenant's items spread over several partition key
values, each item under one of them, all of them listed for a read by tenant."""

from __future__ import annotations

import pytest

from clockless.dynamo import bucketed_key, shard_for, tenant_keys, tenant_of


def test_an_item_has_one_key_of_its_tenants_buckets_from_its_own_id() -> None:
    keys = {bucketed_key("acme", f"item-{n}", 16) for n in range(1_000)}

    assert keys == set(tenant_keys("acme", 16))  # every bucket used, none other
    assert bucketed_key("acme", "item-7", 16) == f"acme#{shard_for('item-7', 16)}"  # a lookup names its key
    assert bucketed_key("acme", "item-7", 16) == bucketed_key("acme", "item-7", 16)


def test_the_tenant_is_read_back_from_its_key_even_with_a_hash_in_its_name() -> None:
    assert tenant_of(bucketed_key("a#b", "x", 4)) == "a#b"
    assert tenant_keys("acme", 1) == ("acme#0",)


@pytest.mark.parametrize("bad", ["", "acme", "#3"])
def test_a_key_that_is_not_a_bucketed_tenant_key_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="<tenant>#<bucket>"):
        tenant_of(bad)


def test_a_tenant_needs_a_bucket() -> None:
    with pytest.raises(ValueError, match="at least one bucket"):
        bucketed_key("acme", "x", 0)
    with pytest.raises(ValueError, match="at least one bucket"):
        tenant_keys("acme", 0)
