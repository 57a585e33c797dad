"""The emulator's processes end with their owner, even when the emulator is a grandchild (as
`npx agent-bridge` runs it, from npm): after a start that timed out, at close(), and when the
interpreter is killed outright."""

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from agent_bridge_testing import Emulator
from agent_bridge_testing._client import default_command

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def gone(pid: int) -> bool:
    """Whether `pid` has exited (absent, or a zombie no one has reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 1 :].split()[0] == "Z"


def wait_gone(pid: int, within: float) -> None:
    deadline = time.monotonic() + within
    while not gone(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"process {pid} outlived its emulator's owner by {within} s")
        time.sleep(0.02)  # polls a condition with a deadline


def read_pid(file: Path) -> int:
    """The pid the shell wrote, once it has."""
    deadline = time.monotonic() + 30
    while not (file.exists() and file.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"no pid in {file}"
        time.sleep(0.02)
    return int(file.read_text())


def through_a_shell(pid_file: Path, command: List[str]) -> List[str]:
    """`command` as a shell's background child, its pid written to `pid_file`."""
    file = shlex.quote(str(pid_file))
    return ["sh", "-c", f'"$@" & echo $! > {file}.tmp && mv {file}.tmp {file}; wait', "sh", *command]


def test_a_start_that_times_out_leaves_no_grandchild(tmp_path: Path):
    pid_file = tmp_path / "pid"
    # Never says it listens; sh -c takes the emulator's arguments as its own $0, $1...
    with pytest.raises(RuntimeError, match="did not start"):
        Emulator.start(command=through_a_shell(pid_file, ["sh", "-c", "exec sleep 300"]), timeout=0.5)
    wait_gone(read_pid(pid_file), 10)


def test_close_stops_an_emulator_that_is_a_grandchild(tmp_path: Path):
    if not os.environ.get("AGENT_BRIDGE_COMMAND"):
        pytest.skip("AGENT_BRIDGE_COMMAND is not set")
    pid_file = tmp_path / "pid"
    emulator = Emulator.start(command=through_a_shell(pid_file, default_command()))
    pid = read_pid(pid_file)
    emulator.close()
    wait_gone(pid, 10)


def test_the_emulator_dies_with_its_interpreter(tmp_path: Path):
    pid_file = tmp_path / "pid"
    command = through_a_shell(pid_file, ["sh", "-c", "exec sleep 300"])
    # An interpreter that starts an emulator whose grandchild holds on, killed before close() or atexit.
    script = f"from agent_bridge_testing import Emulator\nEmulator.start(command={command!r}, timeout=60)\n"
    owner = subprocess.Popen([sys.executable, "-c", script])
    try:
        pid = read_pid(pid_file)
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        wait_gone(pid, 15)
    finally:
        owner.kill()
        owner.wait()
