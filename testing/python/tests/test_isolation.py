"""Many tests at once against one emulator (pytest-xdist workers, or several pytest processes):
each one's instances, fault, clock and journal are its own, counted to the request."""

import os

import pytest

from agent_bridge_testing import Emulator, Sandbox

#: How many copies of the test each process runs (the repository's run: 8 workers or processes).
COPIES = int(os.environ.get("AGENT_BRIDGE_ISOLATION_COPIES", "6"))


@pytest.mark.parametrize("copy", range(COPIES))
def test_a_sandbox_sees_only_its_own_world(agent_bridge: Emulator, agent_bridge_sandbox: Sandbox, record_property, copy: int):
    record_property("emulator", agent_bridge.url)  # every worker's tests reach the one emulator
    sandbox = agent_bridge_sandbox
    assert sandbox.call("PATCH", "/v1/organization", {"model_api_keys": {"anthropic": "sk-test"}}).status == 200
    sandbox.set_tier("crab")  # room for more than one instance
    sandbox.add_fault("api", path="/v1/instances", method="POST", status=503, times=1)
    # Named after this process and copy: another test's instance showing up here would be named otherwise.
    names = [f"p{os.getpid()}-c{copy}-{n}" for n in range(3)]
    statuses = [sandbox.call("POST", "/v1/instances", {"name": name}).status for name in names]
    assert statuses == [503, 201, 201]
    moved = sandbox.advance(1000)
    assert len(moved.happened) == 2 and moved.offset_ms == 1000
    listed = sandbox.call("GET", "/v1/instances").json()
    assert sorted(i["name"] for i in listed) == names[1:]
    assert {i["status"] for i in listed} == {"running"}
    sandbox.assert_received(route="createInstance", times=3)
    sandbox.assert_received(route="createInstance", status=503, times=1)
    assert sandbox.count() == 5  # the provider key, three creates, the list (control-plane calls are not in it)
    info = sandbox.info()
    assert (info.instance_count, info.request_count, info.clock.offset_ms) == (2, 5, 1000)
