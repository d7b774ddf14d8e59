"""clockless.dynamo's bucketed tenant keys: one tenant's items spread over several partition key
values, each item under one of them, all of them listed for a read by tenant."""

from __future__ import annotations

import pytest

from clockless.dynamo import bucketed_key, index_shard_for, shard_for, tenant_keys, tenant_of


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


def test_an_index_shard_spreads_over_every_bucket_of_one_tenant() -> None:
    # GIVEN one tenant's items, each under its bucket and on one index shard (from `<tenant>#<id>`)
    ids = [f"prog-{n:05d}" for n in range(3_200)]
    shard_buckets: dict[str, set[str]] = {}
    for item_id in ids:
        shard = index_shard_for(f"acme#{item_id}", 32)
        shard_buckets.setdefault(shard, set()).add(bucketed_key("acme", item_id, 16))

    # THEN every shard's worker writes over (nearly) all of the tenant's 16 keys, not one of them
    assert len(shard_buckets) == 32
    assert min(len(buckets) for buckets in shard_buckets.values()) >= 12
    # (CRC-32 is affine: the same shard from it would put each shard in exactly one bucket)
    crc_buckets: dict[str, set[str]] = {}
    for item_id in ids:
        crc_buckets.setdefault(shard_for(f"acme#{item_id}", 32), set()).add(bucketed_key("acme", item_id, 16))
    assert len(crc_buckets) == 32
    assert {len(buckets) for buckets in crc_buckets.values()} == {1}


def test_an_index_needs_a_shard() -> None:
    with pytest.raises(ValueError, match="at least one shard"):
        index_shard_for("acme#x", 0)
