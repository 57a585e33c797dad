"""Test helpers for the agent-bridge emulator: a pytest plugin, and the emulator and its sandboxes
over HTTP for any other runner. Standard library only.

    def test_creates_the_bot(agent_bridge_sandbox):
        res = agent_bridge_sandbox.call("POST", "/v1/instances", {"name": "support-bot"})
        assert res.status == 201
        agent_bridge_sandbox.assert_received(route="createInstance", status=201, times=1)
"""

from ._client import FILTER_FIELDS, OPERATIONS, RECORDING_HEADER, Emulator, Response, Sandbox, default_command
from ._types import (
    ClockEvent,
    ControlPlaneError,
    FaultRule,
    ModelScriptView,
    RecordingUsage,
    Recordings,
    SandboxClock,
    SandboxClockMove,
    SandboxCreated,
    SandboxInfo,
    SandboxRequest,
    UnmatchedRequest,
)

__version__ = "0.1.0"

__all__ = [
    "FILTER_FIELDS",
    "OPERATIONS",
    "RECORDING_HEADER",
    "ClockEvent",
    "ControlPlaneError",
    "Emulator",
    "FaultRule",
    "ModelScriptView",
    "RecordingUsage",
    "Recordings",
    "Response",
    "Sandbox",
    "SandboxClock",
    "SandboxClockMove",
    "SandboxCreated",
    "SandboxInfo",
    "SandboxRequest",
    "UnmatchedRequest",
    "default_command",
]
