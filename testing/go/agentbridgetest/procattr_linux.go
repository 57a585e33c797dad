package agentbridgetest

import (
	"os/exec"
	"syscall"
)

// supervisor runs the command as a shell's child, in the process group the shell leads. The
// emulator may be a grandchild (`npx agent-bridge` runs it from npm, which does not pass every
// signal on), so the shell answers a SIGTERM by passing it to the whole group.
const supervisor = `trap 'trap "" TERM; kill -TERM 0; exit 143' TERM
"$@" &
wait $!`

// newCommand is the emulator's command under the supervisor, in a process group of its own. Linux
// sends the supervisor SIGTERM when the test binary dies without running Close (a test timeout's
// panic, a kill), and it stops the group, so no emulator outlives its tests.
func newCommand(path string, args []string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", append([]string{"-c", supervisor, "agent-bridge", path}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd
}

// signal sends sig to the emulator's whole process group.
func signal(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}
