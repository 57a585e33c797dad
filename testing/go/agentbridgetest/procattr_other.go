//go:build !linux

package agentbridgetest

import "os/exec"

// stopWithParent: only Linux can tie a child's life to its parent's; elsewhere Close stops it.
func stopWithParent(cmd *exec.Cmd) {}
