"""The bridge interface's address, the gateway's fallback, read from this host's own interfaces."""

from __future__ import annotations

from clockless_tools.engine.dockerd import ipv4_of


def test_the_loopback_interface_has_its_address_and_a_missing_one_none() -> None:
    assert ipv4_of("lo") == "127.0.0.1"
    assert ipv4_of("no-such-interface0") is None
