package agentbridgetest_test

import (
	"context"
	"net/http"
	"testing"

	"agent-bridge/testing/go/agentbridgetest"
)

// A recording replayed by an emulator this test starts itself (StartEmulator with Replay), beside
// the shared one; the report names the recorded request no test made.
func TestARecordingIsReplayed(t *testing.T) {
	ctx := context.Background()
	e, err := agentbridgetest.StartEmulator(ctx, agentbridgetest.EmulatorOptions{Replay: "testdata/recordings", ReplayMode: "strict"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })

	t.Run("answers from the recording named after the sandbox", func(t *testing.T) {
		sb := agentbridgetest.Start(t, agentbridgetest.WithEmulator(e), agentbridgetest.WithRecording("greeting"))
		res := sb.Do("GET", "/v1/organization", nil)
		if res.Header.Get("x-agent-bridge-replay") != "greeting#1" || string(res.Body) != `{"name":"from the recording"}` {
			t.Errorf("%d %v %s", res.Status, res.Header, res.Body)
		}
		if sb.Name != "greeting" || sb.Header().Get("x-agent-bridge-recording") != "greeting" {
			t.Errorf("name %q, header %q", sb.Name, sb.Header().Get("x-agent-bridge-recording"))
		}
		sb.AssertReceived(agentbridgetest.Filter{Route: "getOrganization"}, 1)
	})

	t.Run("a request with no recording is refused", func(t *testing.T) {
		sb := agentbridgetest.Start(t, agentbridgetest.WithEmulator(e))
		missing := sb.DoWithHeader("GET", "/v1/subscription", nil, http.Header{"X-Agent-Bridge-Recording": {"greeting"}})
		if missing.Status != 404 || missing.Header.Get("x-agent-bridge-replay") != "miss" {
			t.Errorf("%d %s", missing.Status, missing.Body)
		}
	})

	report, err := e.UnusedRecordingsReport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "recordings not used by this run:\n  greeting (testdata/recordings/greeting.recording.json): request(s) #2 of 2 never replayed\n"; report != want {
		t.Errorf("report %q, want %q", report, want)
	}
}
