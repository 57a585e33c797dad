"""A recording replayed: run with `--agent-bridge-replay tests/replay/recordings` (the plugin starts
its own emulator answering from them); the run ends naming the recorded request no test made."""

import pytest

from agent_bridge_testing import Sandbox


@pytest.mark.agent_bridge_recording("greeting")
def test_answers_from_the_recording_named_after_the_sandbox(agent_bridge_sandbox: Sandbox):
    res = agent_bridge_sandbox.call("GET", "/v1/organization")
    assert res.headers["x-agent-bridge-replay"] == "greeting#1"
    assert res.json() == {"name": "from the recording"}
    assert agent_bridge_sandbox.name == "greeting"
    agent_bridge_sandbox.assert_received(route="getOrganization", times=1)


def test_a_request_with_no_recording_is_refused_naming_the_closest(agent_bridge_sandbox: Sandbox):
    res = agent_bridge_sandbox.call("GET", "/v1/organization", headers={"x-agent-bridge-recording": "greeting"})
    assert res.status == 200  # the header picks the recording, whatever the sandbox's name
    missing = agent_bridge_sandbox.call("GET", "/v1/subscription", headers={"x-agent-bridge-recording": "greeting"})
    assert missing.status == 404
    assert missing.headers["x-agent-bridge-replay"] == "miss"
