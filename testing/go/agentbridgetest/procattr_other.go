//go:build !unix

package agentbridgetest

import (
	"os/exec"
	"syscall"
)

// newCommand runs the emulator directly: there are no process groups to put it in here.
func newCommand(path string, args []string) *exec.Cmd {
	return exec.Command(path, args...)
}

// signal sends sig to the process started (where it cannot be sent, Close kills it).
func signal(cmd *exec.Cmd, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return cmd.Process.Kill()
	}
	return cmd.Process.Signal(sig)
}
