"""Each verb of the sandbox, against the real emulator (started with a provisioning time of 1 s,
which only the sandbox's clock moves past)."""

import datetime
import uuid

import pytest

from agent_bridge_testing import ControlPlaneError, Emulator, Sandbox


def with_provider_key(sandbox: Sandbox) -> Sandbox:
    """An instance needs its organization to hold a model provider's key."""
    assert sandbox.call("PATCH", "/v1/organization", {"model_api_keys": {"anthropic": "sk-test"}}).status == 200
    return sandbox


def running_instance(sandbox: Sandbox, name: str = "bot") -> str:
    with_provider_key(sandbox)
    created = sandbox.call("POST", "/v1/instances", {"name": name})
    assert created.status == 201, created
    instance = created.json()["id"]
    moved = sandbox.advance(datetime.timedelta(seconds=1))
    assert ("instance_running", instance) in [(e.kind, e.id) for e in moved.happened]
    return instance


def test_a_sandbox_has_its_own_key_and_organization(agent_bridge_sandbox: Sandbox):
    res = agent_bridge_sandbox.call("GET", "/v1/organization")
    assert res.status == 200
    assert res.json()["id"] == agent_bridge_sandbox.organization_id
    assert agent_bridge_sandbox.api_key.startswith("svc_org_")
    assert agent_bridge_sandbox.info().request_count == 1


def test_requests_count_and_assert_received(agent_bridge_sandbox: Sandbox):
    with_provider_key(agent_bridge_sandbox)
    agent_bridge_sandbox.call("POST", "/v1/instances", {"name": "a"})
    agent_bridge_sandbox.call("POST", "/v1/instances", {})
    agent_bridge_sandbox.assert_received(route="createInstance", status=201, times=1)
    agent_bridge_sandbox.assert_received(route="createInstance", status=422, times=1)
    assert agent_bridge_sandbox.count(method="POST") == 2
    assert agent_bridge_sandbox.count() == 3
    first = agent_bridge_sandbox.requests(route="createInstance")[0]
    assert (first.method, first.path, first.status, first.key_kind, first.body) == ("POST", "/v1/instances", 201, "org", {"name": "a"})
    with pytest.raises(AssertionError) as failed:
        agent_bridge_sandbox.assert_received(route="deleteInstance")
    assert 'route="deleteInstance"' in str(failed.value)
    assert "POST /v1/instances -> 201 (createInstance)" in str(failed.value)
    with pytest.raises(AssertionError, match=r"2 time\(s\), it received it 1 time\(s\)"):
        agent_bridge_sandbox.assert_received(route="createInstance", status=201, times=2)
    with pytest.raises(TypeError, match="unknown request filter colour"):
        agent_bridge_sandbox.requests(colour="red")


def test_unmatched_requests_name_the_closest_route(agent_bridge_sandbox: Sandbox):
    agent_bridge_sandbox.assert_no_unmatched_requests()
    assert agent_bridge_sandbox.call("GET", "/v1/instancez").status == 404
    [unmatched] = agent_bridge_sandbox.unmatched()
    assert (unmatched.path, unmatched.reason, unmatched.closest_route) == ("/v1/instancez", "unknown_route", "GET /v1/instances")
    with pytest.raises(AssertionError, match=r"GET /v1/instancez: unknown_route \(closest route: GET /v1/instances\)"):
        agent_bridge_sandbox.assert_no_unmatched_requests()


def test_a_fault_fires_on_this_sandbox_only(agent_bridge_sandbox: Sandbox, agent_bridge: Emulator):
    with_provider_key(agent_bridge_sandbox)
    rule = agent_bridge_sandbox.add_fault("api", path="/v1/instances", method="POST", status=503, times=1)
    assert (rule.remaining, rule.hits, rule.status) == (1, 0, 503)
    with agent_bridge.create_sandbox(name="neighbour") as neighbour:
        with_provider_key(neighbour)
        assert neighbour.call("POST", "/v1/instances", {"name": "n"}).status == 201
    assert agent_bridge_sandbox.call("POST", "/v1/instances", {"name": "x"}).status == 503
    assert agent_bridge_sandbox.call("POST", "/v1/instances", {"name": "x"}).status == 201
    agent_bridge_sandbox.assert_received(route="createInstance", status=503, times=1)


def test_the_clock_moves_for_this_sandbox_only(agent_bridge_sandbox: Sandbox, agent_bridge: Emulator):
    created = with_provider_key(agent_bridge_sandbox).call("POST", "/v1/instances", {"name": "slow"}).json()
    assert created["status"] == "provisioning"
    with agent_bridge.create_sandbox() as other:
        other_instance = with_provider_key(other).call("POST", "/v1/instances", {"name": "other"}).json()["id"]
        moved = agent_bridge_sandbox.advance(1000)
        assert moved.offset_ms == 1000
        assert [(e.kind, e.id) for e in moved.happened] == [("instance_running", created["id"])]
        assert other.call("GET", f"/v1/instances/{other_instance}").json()["status"] == "provisioning"
    assert agent_bridge_sandbox.call("GET", f"/v1/instances/{created['id']}").json()["status"] == "running"
    later = datetime.datetime.fromisoformat(moved.now.replace("Z", "+00:00")) + datetime.timedelta(days=1)
    assert agent_bridge_sandbox.set_clock(later).now == moved.now.replace(moved.now[:10], later.date().isoformat())
    with pytest.raises(ControlPlaneError) as refused:
        agent_bridge_sandbox.set_clock("2001-01-01T00:00:00.000Z")
    assert refused.value.status == 409


def test_a_scripted_model_answers_in_a_named_session(agent_bridge_sandbox: Sandbox):
    instance = running_instance(agent_bridge_sandbox)
    view = agent_bridge_sandbox.set_model_script({"rules": [{"name": "weather", "match": {"contains": "weather"}, "answer": {"text": "Sunny."}}]})
    assert view.scope == "sandbox"
    reply = agent_bridge_sandbox.call("POST", f"/v1/instances/{instance}/session/alice/responses", {"model": "claude", "input": "the weather?"})
    assert reply.status == 200
    assert reply.headers["x-emulator-model-rule"] == "weather"
    assert reply.json()["output"][-1]["content"][0]["text"] == "Sunny."
    agent_bridge_sandbox.assert_received(method="POST", session="alice", times=1)
    agent_bridge_sandbox.clear_model_script()
    again = agent_bridge_sandbox.call("POST", f"/v1/instances/{instance}/session/alice/responses", {"model": "claude", "input": "the weather?"})
    assert "x-emulator-model-rule" not in again.headers


def test_a_tier_limits_instances(agent_bridge_sandbox: Sandbox):
    with_provider_key(agent_bridge_sandbox).set_tier("shrimp")
    assert agent_bridge_sandbox.call("POST", "/v1/instances", {"name": "one"}).status == 201
    assert agent_bridge_sandbox.call("POST", "/v1/instances", {"name": "two"}).status == 402


def test_har_reset_and_remove(agent_bridge: Emulator):
    sandbox = with_provider_key(agent_bridge.create_sandbox(name="har and reset"))
    sandbox.call("POST", "/v1/instances", {"name": "h"})
    har = sandbox.har(route="createInstance")
    assert har["log"]["version"] == "1.2"
    assert [e["request"]["method"] for e in har["log"]["entries"]] == ["POST"]
    assert sandbox.info().instance_count == 1
    after = sandbox.reset()
    assert (after.instance_count, after.request_count, after.name) == (0, 0, "har and reset")
    sandbox.remove()
    with pytest.raises(ControlPlaneError) as gone:
        sandbox.info()
    assert gone.value.status == 404


def test_a_fixture_seeds_the_sandbox(agent_bridge: Emulator):
    key = f"svc_org_test_py_{uuid.uuid4().hex[:16]}"  # chosen keys are unique across the emulator
    organization = {"name": "acme", "api_key": key, "provider_keys": {"anthropic": "sk-test"}, "instances": [{"name": "seeded"}]}
    with agent_bridge.create_sandbox(fixtures={"organizations": [organization]}) as sandbox:
        assert sandbox.created.fixture is not None
        listed = sandbox.call("GET", "/v1/instances", headers={"authorization": f"Bearer {key}"})
        assert [i["name"] for i in listed.json()] == ["seeded"]
        assert sandbox.call("GET", "/v1/instances").json() == []  # the sandbox's own organization


def test_a_sandbox_clock_can_start_elsewhere(agent_bridge: Emulator):
    with agent_bridge.create_sandbox(clock_start="2030-01-01T00:00:00.000Z") as sandbox:
        assert sandbox.info().clock.now.startswith("2030-01-01T00:00")
        assert sandbox.advance(60_000).now.startswith("2030-01-01T00:01")


def test_an_emulator_with_an_admin_token_needs_it_on_the_control_plane():
    # Off loopback (a container, a shared CI service) the control plane needs the emulator's token.
    with Emulator.start(admin_token="a-token-for-the-tests") as guarded:
        with pytest.raises(ControlPlaneError) as refused:
            Emulator.connect(guarded.url)
        assert refused.value.status == 401
        with Emulator.connect(guarded.url, admin_token="a-token-for-the-tests").create_sandbox() as sandbox:
            assert sandbox.call("GET", "/v1/organization").status == 200
