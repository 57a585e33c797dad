package agentbridgetest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"agent-bridge/testing/go/agentbridgetest"
)

// gone says whether pid has exited (absent, or a zombie no one has reaped yet).
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] == "Z"
}

// waitGone fails the test unless pid exits within the bound.
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
			t.Fatalf("process %d outlived its emulator's owner by %s", pid, within)
		}
		time.Sleep(20 * time.Millisecond) // polls a condition with a deadline
	}
}

// readPid waits for the shell to write its background child's pid.
func readPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if data, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", file)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A command whose emulator is a grandchild (as `npx agent-bridge` runs it, through npm) and never
// says it listens: the start times out, returns, and leaves no process behind.
func TestAStartThatTimesOutLeavesNoGrandchildAndReturns(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	command := []string{"sh", "-c", `sleep 300 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidFile}
	done := make(chan error, 1)
	go func() {
		_, err := agentbridgetest.StartEmulator(context.Background(), agentbridgetest.EmulatorOptions{Command: command, StartTimeout: 500 * time.Millisecond})
		done <- err
	}()
	pid := readPid(t, pidFile)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not start in time") {
			t.Fatalf("want a start timeout, got %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
		t.Fatal("StartEmulator did not return after its start timeout")
	}
	waitGone(t, pid, 10*time.Second)
}

// emulatorCommand is the agent-bridge command, for the tests that need a real emulator started.
func emulatorCommand(t *testing.T) []string {
	command := strings.Fields(os.Getenv(agentbridgetest.CommandEnv))
	if len(command) == 0 {
		t.Skip(agentbridgetest.CommandEnv + " is not set")
	}
	return command
}

// throughAShell runs the command as a shell's background child and writes its pid to pidFile.
func throughAShell(pidFile string, command []string) []string {
	return append([]string{"sh", "-c", `"$@" & echo $! > "` + pidFile + `.tmp" && mv "` + pidFile + `.tmp" "` + pidFile + `"; wait`, "sh"}, command...)
}

// Close stops an emulator that runs as a grandchild, not only the process it started.
func TestCloseStopsAnEmulatorThatIsAGrandchild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	e, err := agentbridgetest.StartEmulator(context.Background(), agentbridgetest.EmulatorOptions{Command: throughAShell(pidFile, emulatorCommand(t))})
	if err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, pidFile)
	closed := make(chan struct{})
	go func() { _ = e.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
		t.Fatal("Close did not return")
	}
	waitGone(t, pid, 10*time.Second)
}

// A test binary killed outright (no Close) takes its emulator with it, grandchild or not.
func TestTheEmulatorDiesWithItsOwner(t *testing.T) {
	if pidFile := os.Getenv("AGENT_BRIDGE_TEST_PID_FILE"); pidFile != "" {
		// The owner, run below: starts a command whose grandchild holds on (as an emulator under
		// npm would, one that does not stop when its output goes), and is killed while it waits.
		command := throughAShell(pidFile, []string{"sh", "-c", "exec sleep 300"})
		_, err := agentbridgetest.StartEmulator(context.Background(), agentbridgetest.EmulatorOptions{Command: command, StartTimeout: time.Minute})
		t.Fatal("killed before this:", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	owner := exec.Command(os.Args[0], "-test.run=^TestTheEmulatorDiesWithItsOwner$", "-test.timeout=60s")
	owner.Env = append(os.Environ(), "AGENT_BRIDGE_TEST_PID_FILE="+pidFile)
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	pid := readPid(t, pidFile)
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	waitGone(t, pid, 15*time.Second)
}
