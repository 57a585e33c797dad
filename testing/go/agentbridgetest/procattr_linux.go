package agentbridgetest

import (
	"os/exec"
	"syscall"
)

// stopWithParent has Linux stop the emulator when the test binary dies without running Close (a
// test timeout's panic, a kill), so no emulator outlives its tests.
func stopWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
