package agentbridgetest_test

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"agent-bridge/testing/go/agentbridgetest"
)

// Many parallel tests against one emulator (go test -parallel 8): each one's instances, fault,
// clock and journal are its own, counted to the request.
func TestSandboxesAreIsolated(t *testing.T) {
	for copy := 0; copy < 24; copy++ {
		copy := copy
		t.Run(fmt.Sprintf("copy-%d", copy), func(t *testing.T) {
			t.Parallel()
			sb := withProviderKey(t, agentbridgetest.Start(t))
			sb.SetTier("crab")
			sb.AddFault(agentbridgetest.FaultRuleRequest{Target: "api", Path: "/v1/instances", Method: "POST", Status: 503, Times: 1})
			// Named after this process and copy: another test's instance showing up here would be named otherwise.
			var statuses []int
			names := []string{}
			for n := 0; n < 3; n++ {
				name := fmt.Sprintf("p%d-c%d-%d", os.Getpid(), copy, n)
				names = append(names, name)
				statuses = append(statuses, sb.Do("POST", "/v1/instances", map[string]any{"name": name}).Status)
			}
			if fmt.Sprint(statuses) != "[503 201 201]" {
				t.Errorf("statuses %v", statuses)
			}
			if moved := sb.Advance(time.Second); len(moved.Happened) != 2 || moved.OffsetMs != 1000 {
				t.Errorf("moved %+v", moved)
			}
			listed := decode[[]instance](t, sb.Do("GET", "/v1/instances", nil))
			var got []string
			for _, i := range listed {
				got = append(got, i.Name)
				if i.Status != "running" {
					t.Errorf("%s is %s", i.Name, i.Status)
				}
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(names[1:]) {
				t.Errorf("listed %v, want %v", got, names[1:])
			}
			sb.AssertReceived(agentbridgetest.Filter{Route: "createInstance"}, 3)
			sb.AssertReceived(agentbridgetest.Filter{Route: "createInstance", Status: 503}, 1)
			if info := sb.Info(); info.InstanceCount != 2 || info.RequestCount != 5 || info.Clock.OffsetMs != 1000 {
				t.Errorf("info %+v", info)
			}
		})
	}
}
