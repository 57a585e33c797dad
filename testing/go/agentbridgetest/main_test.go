package agentbridgetest_test

import (
	"os"
	"testing"

	"agent-bridge/testing/go/agentbridgetest"
)

// One emulator for the package's tests: the one AGENT_BRIDGE_URL names, else one started here
// (AGENT_BRIDGE_COMMAND, else agent-bridge on PATH, else npx agent-bridge). Instances provision in
// 1 s, which only a sandbox's clock moves past.
func TestMain(m *testing.M) {
	os.Exit(agentbridgetest.Main(m, agentbridgetest.EmulatorOptions{ProvisionMs: 1000}))
}
