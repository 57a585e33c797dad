//go:build unix && !linux

package agentbridgetest

import (
	"os/exec"
	"syscall"
)

// newCommand runs the emulator in a process group of its own, so signal reaches a grandchild too
// (`npx agent-bridge` runs it from npm). Only Linux can tie its life to the test binary's; here
// Close stops it.
func newCommand(path string, args []string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// signal sends sig to the emulator's whole process group.
func signal(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}
