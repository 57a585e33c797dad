package agentbridgetest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"agent-bridge/testing/go/agentbridgetest"
)

type instance struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

func withProviderKey(t *testing.T, sb *agentbridgetest.Sandbox) *agentbridgetest.Sandbox {
	t.Helper()
	if res := sb.Do("PATCH", "/v1/organization", map[string]any{"model_api_keys": map[string]string{"anthropic": "sk-test"}}); res.Status != 200 {
		t.Fatalf("provider key: %d %s", res.Status, res.Body)
	}
	return sb
}

func decode[T any](t *testing.T, res *agentbridgetest.Response) T {
	t.Helper()
	var out T
	if err := res.JSON(&out); err != nil {
		t.Fatalf("%d %s: %v", res.Status, res.Body, err)
	}
	return out
}

func TestASandboxHasItsOwnKeyAndOrganization(t *testing.T) {
	t.Parallel()
	sb := agentbridgetest.Start(t)
	org := decode[map[string]any](t, sb.Do("GET", "/v1/organization", nil))
	if org["id"] != sb.OrganizationID || !strings.HasPrefix(sb.APIKey, "svc_org_") {
		t.Errorf("organization %v, key %s...", org["id"], sb.APIKey[:8])
	}
	if info := sb.Info(); info.RequestCount != 1 || info.Name != t.Name() {
		t.Errorf("info %+v", info)
	}
}

func TestRequestsCountAndAssertReceived(t *testing.T) {
	t.Parallel()
	sb := withProviderKey(t, agentbridgetest.Start(t))
	sb.Do("POST", "/v1/instances", map[string]any{"name": "a"})
	sb.Do("POST", "/v1/instances", map[string]any{})
	sb.AssertReceived(agentbridgetest.Filter{Route: "createInstance", Status: 201}, 1)
	sb.AssertReceived(agentbridgetest.Filter{Route: "createInstance", Status: 422}, 1)
	if n := sb.Count(agentbridgetest.Filter{Method: "POST"}); n != 2 {
		t.Errorf("POST count %d", n)
	}
	first := sb.Requests(agentbridgetest.Filter{Route: "createInstance"})[0]
	if first.Method != "POST" || first.Status != 201 || first.KeyKind != "org" || fmt.Sprint(first.Body) != "map[name:a]" {
		t.Errorf("first %+v", first)
	}
	missing := sb.ReceivedMessage(agentbridgetest.Filter{Route: "deleteInstance"})
	if !strings.Contains(missing, `route="deleteInstance"`) || !strings.Contains(missing, "POST /v1/instances -> 201 (createInstance)") {
		t.Errorf("message %q", missing)
	}
	if m := sb.ReceivedMessage(agentbridgetest.Filter{Route: "createInstance", Status: 201}, 2); !strings.Contains(m, "2 time(s), it received it 1 time(s)") {
		t.Errorf("message %q", m)
	}
}

func TestUnmatchedRequestsNameTheClosestRoute(t *testing.T) {
	t.Parallel()
	sb := agentbridgetest.Start(t)
	sb.AssertNoUnmatchedRequests()
	if res := sb.Do("GET", "/v1/instancez", nil); res.Status != 404 {
		t.Errorf("status %d", res.Status)
	}
	unmatched := sb.Unmatched()
	if len(unmatched) != 1 || unmatched[0].Reason != "unknown_route" || unmatched[0].ClosestRoute == nil || *unmatched[0].ClosestRoute != "GET /v1/instances" {
		t.Errorf("unmatched %+v", unmatched)
	}
}

func TestAFaultFiresOnThisSandboxOnly(t *testing.T) {
	t.Parallel()
	sb := withProviderKey(t, agentbridgetest.Start(t))
	rule := sb.AddFault(agentbridgetest.FaultRuleRequest{Target: "api", Path: "/v1/instances", Method: "POST", Status: 503, Times: 1})
	if rule.Remaining == nil || *rule.Remaining != 1 || rule.Hits != 0 {
		t.Errorf("rule %+v", rule)
	}
	neighbour := withProviderKey(t, agentbridgetest.Start(t, agentbridgetest.WithName("neighbour")))
	if res := neighbour.Do("POST", "/v1/instances", map[string]any{"name": "n"}); res.Status != 201 {
		t.Errorf("neighbour %d", res.Status)
	}
	first, second := sb.Do("POST", "/v1/instances", map[string]any{"name": "x"}), sb.Do("POST", "/v1/instances", map[string]any{"name": "x"})
	if first.Status != 503 || second.Status != 201 {
		t.Errorf("statuses %d %d", first.Status, second.Status)
	}
	sb.AssertReceived(agentbridgetest.Filter{Route: "createInstance", Status: 503}, 1)
}

func TestTheClockMovesForThisSandboxOnly(t *testing.T) {
	t.Parallel()
	sb := withProviderKey(t, agentbridgetest.Start(t))
	other := withProviderKey(t, agentbridgetest.Start(t))
	created := decode[instance](t, sb.Do("POST", "/v1/instances", map[string]any{"name": "slow"}))
	otherInstance := decode[instance](t, other.Do("POST", "/v1/instances", map[string]any{"name": "other"}))
	moved := sb.Advance(time.Second)
	if moved.OffsetMs != 1000 || len(moved.Happened) != 1 || moved.Happened[0].Kind != "instance_running" || moved.Happened[0].ID != created.ID {
		t.Errorf("moved %+v", moved)
	}
	if got := decode[instance](t, sb.Do("GET", "/v1/instances/"+created.ID, nil)); got.Status != "running" {
		t.Errorf("mine %s", got.Status)
	}
	if got := decode[instance](t, other.Do("GET", "/v1/instances/"+otherInstance.ID, nil)); got.Status != "provisioning" {
		t.Errorf("the other sandbox's %s", got.Status)
	}
	now, err := time.Parse(time.RFC3339, moved.Now)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(24 * time.Hour)
	if set := sb.SetClock(later); set.Now != later.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("set %+v", set)
	}
	_, err = sb.Client.SetClock(context.Background(), time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	var refused *agentbridgetest.ControlPlaneError
	if !errors.As(err, &refused) || refused.Status != 409 {
		t.Errorf("setting the clock back: %v", err)
	}
}

func TestAScriptedModelAnswersInANamedSession(t *testing.T) {
	t.Parallel()
	sb := withProviderKey(t, agentbridgetest.Start(t))
	created := decode[instance](t, sb.Do("POST", "/v1/instances", map[string]any{"name": "bot"}))
	sb.Advance(time.Second)
	view := sb.SetModelScript(map[string]any{"rules": []any{map[string]any{"name": "weather", "match": map[string]any{"contains": "weather"}, "answer": map[string]any{"text": "Sunny."}}}})
	if view.Scope != "sandbox" {
		t.Errorf("scope %s", view.Scope)
	}
	reply := sb.Do("POST", "/v1/instances/"+created.ID+"/session/alice/responses", map[string]any{"model": "claude", "input": "the weather?"})
	if reply.Status != 200 || reply.Header.Get("x-emulator-model-rule") != "weather" || !strings.Contains(string(reply.Body), `"text":"Sunny."`) {
		t.Errorf("reply %d %s", reply.Status, reply.Body)
	}
	sb.AssertReceived(agentbridgetest.Filter{Method: "POST", Session: "alice"}, 1)
	sb.ClearModelScript()
	again := sb.Do("POST", "/v1/instances/"+created.ID+"/session/alice/responses", map[string]any{"model": "claude", "input": "the weather?"})
	if again.Header.Get("x-emulator-model-rule") != "" {
		t.Errorf("the script still answers")
	}
}

func TestATierLimitsInstances(t *testing.T) {
	t.Parallel()
	sb := withProviderKey(t, agentbridgetest.Start(t))
	sb.SetTier("shrimp")
	if one, two := sb.Do("POST", "/v1/instances", map[string]any{"name": "one"}), sb.Do("POST", "/v1/instances", map[string]any{"name": "two"}); one.Status != 201 || two.Status != 402 {
		t.Errorf("statuses %d %d", one.Status, two.Status)
	}
}

func TestHARResetAndRemove(t *testing.T) {
	t.Parallel()
	sb := withProviderKey(t, agentbridgetest.Start(t, agentbridgetest.WithName("har and reset")))
	sb.Do("POST", "/v1/instances", map[string]any{"name": "h"})
	har := sb.HAR(agentbridgetest.Filter{Route: "createInstance"})
	log, _ := har["log"].(map[string]any)
	entries, _ := log["entries"].([]any)
	if log["version"] != "1.2" || len(entries) != 1 {
		t.Errorf("har %v", har)
	}
	if after := sb.Reset(); after.InstanceCount != 0 || after.RequestCount != 0 || after.Name != "har and reset" {
		t.Errorf("after reset %+v", after)
	}
	if err := sb.Client.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := sb.Client.Info(context.Background())
	var gone *agentbridgetest.ControlPlaneError
	if !errors.As(err, &gone) || gone.Status != 404 {
		t.Errorf("after remove: %v", err)
	}
}

func TestAFixtureSeedsTheSandbox(t *testing.T) {
	t.Parallel()
	key := fmt.Sprintf("svc_org_test_go_%d", time.Now().UnixNano()) // chosen keys are unique across the emulator
	organization := map[string]any{"name": "acme", "api_key": key, "provider_keys": map[string]string{"anthropic": "sk-test"}, "instances": []any{map[string]any{"name": "seeded"}}}
	sb := agentbridgetest.Start(t, agentbridgetest.WithFixtures(map[string]any{"organizations": []any{organization}}))
	if sb.Created.Fixture == nil {
		t.Errorf("no fixture in the answer")
	}
	listed := decode[[]instance](t, sb.DoWithHeader("GET", "/v1/instances", nil, map[string][]string{"Authorization": {"Bearer " + key}}))
	if len(listed) != 1 || listed[0].Name != "seeded" {
		t.Errorf("listed %+v", listed)
	}
	if own := decode[[]instance](t, sb.Do("GET", "/v1/instances", nil)); len(own) != 0 {
		t.Errorf("the sandbox's own organization has %+v", own)
	}
}

func TestASandboxClockCanStartElsewhere(t *testing.T) {
	t.Parallel()
	sb := agentbridgetest.Start(t, agentbridgetest.WithClockStart(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	if now := sb.Info().Clock.Now; !strings.HasPrefix(now, "2030-01-01T00:00") {
		t.Errorf("now %s", now)
	}
	if moved := sb.Advance(time.Minute); !strings.HasPrefix(moved.Now, "2030-01-01T00:01") {
		t.Errorf("moved %+v", moved)
	}
}

func TestAnEmulatorWithAnAdminTokenNeedsItOnTheControlPlane(t *testing.T) {
	// Off loopback (a container, a shared CI service) the control plane needs the emulator's token.
	ctx := context.Background()
	guarded, err := agentbridgetest.StartEmulator(ctx, agentbridgetest.EmulatorOptions{AdminToken: "a-token-for-the-tests"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guarded.Close() })
	var refused *agentbridgetest.ControlPlaneError
	if _, err := agentbridgetest.Connect(ctx, guarded.URL, ""); !errors.As(err, &refused) || refused.Status != 401 {
		t.Errorf("without the token: %v", err)
	}
	with, err := agentbridgetest.Connect(ctx, guarded.URL, "a-token-for-the-tests")
	if err != nil {
		t.Fatal(err)
	}
	sb := agentbridgetest.Start(t, agentbridgetest.WithEmulator(with))
	if res := sb.Do("GET", "/v1/organization", nil); res.Status != 200 {
		t.Errorf("status %d", res.Status)
	}
}
