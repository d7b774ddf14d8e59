"""The host's address as containers on the default bridge see it, read from what the engine reports."""

from __future__ import annotations

import json

from clockless_tools.engine.dockerd import gateway_of


def inspection(configs: list[dict[str, str]], bridge: str | None = "docker0") -> str:
    options = {"com.docker.network.bridge.name": bridge} if bridge else {}
    return json.dumps([{"Name": "bridge", "IPAM": {"Driver": "default", "Config": configs}, "Options": options}])


def no_interface(name: str) -> str | None:
    return None


def test_the_ipam_gateway_is_the_address() -> None:
    found = gateway_of(inspection([{"Subnet": "172.17.0.0/16", "Gateway": "172.17.0.1"}]), no_interface)
    assert found == ("172.17.0.1", "")


def test_without_an_ipam_gateway_the_bridge_interface_answers() -> None:
    asked: list[str] = []

    def interface(name: str) -> str | None:
        asked.append(name)
        return "10.9.0.1"

    assert gateway_of(inspection([{"Subnet": "10.9.0.0/16"}], bridge="br-clockless"), interface) == ("10.9.0.1", "")
    assert asked == ["br-clockless"]


def test_neither_is_an_empty_answer_that_says_what_the_engine_reported() -> None:
    address, reported = gateway_of(inspection([{"Subnet": "172.17.0.0/16"}]), no_interface)
    assert address == ""
    assert '"Subnet": "172.17.0.0/16"' in reported
    assert "docker0 has no IPv4 address" in reported


def test_output_that_is_not_an_inspection_is_named() -> None:
    address, reported = gateway_of("Error: No such network: bridge", no_interface)
    assert address == ""
    assert "not a network inspection" in reported
