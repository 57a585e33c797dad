"""The control plane's bodies and answers, as the emulator's OpenAPI document states them.

Each class here is one schema of `control-plane.json` (same name, same fields, same types); the
package's tests check that, and the repository's tests check the manifest against the document
the emulator serves. Answers are parsed, not trusted: `parse` raises `ControlPlaneError` naming
the field that is not what the document says. Fields the document adds later are ignored.
"""

import dataclasses
from typing import Any, Dict, List, Literal, Optional, Type, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")

KeyKind = Literal["org", "scoped", "none"]
UnmatchedReason = Literal["unknown_route", "wrong_method", "unknown_key"]
ClockEventKind = Literal["instance_running", "instance_error", "key_expired"]
FaultTarget = Literal["gateway", "api", "provision"]
FaultError = Literal["reset", "timeout"]
Tier = Literal["shrimp", "crab", "lobster"]
ScriptScope = Literal["global", "sandbox", "instance"]
ReplayMode = Literal["strict", "record-if-missing", "passthrough"]


class ControlPlaneError(Exception):
    """The control plane refused a call, or answered something its document does not describe."""

    def __init__(self, call: str, status: Optional[int], body: str) -> None:
        self.call = call
        self.status = status
        self.body = body
        where = f"answered {status}" if status is not None else "failed"
        super().__init__(f"{call} {where}: {body[:500]}")


@dataclasses.dataclass(frozen=True)
class SandboxCreateRequest:
    name: Optional[str] = None
    clock_start: Optional[str] = None
    fixtures: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class SandboxClock:
    now: str
    offset_ms: int


@dataclasses.dataclass(frozen=True)
class SandboxInfo:
    """A sandbox as `GET /_emulator/sandboxes/{id}` describes it (the document's `Sandbox`)."""

    id: str
    name: str
    organization_id: str
    organization_ids: List[str]
    instance_count: int
    request_count: int
    clock: SandboxClock
    created_at: str


@dataclasses.dataclass(frozen=True)
class SandboxCreated:
    id: str
    name: str
    organization_id: str
    organization_ids: List[str]
    instance_count: int
    request_count: int
    clock: SandboxClock
    created_at: str
    api_key: str
    fixture: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class SandboxRequest:
    """One request the sandbox received, as its journal holds it (bodies redacted)."""

    seq: int
    at: str
    method: str
    path: str
    route: Optional[str]
    status: int
    instance_id: Optional[str]
    session: Optional[str]
    key_kind: KeyKind
    body: Any
    ms: float
    request_id: str


@dataclasses.dataclass(frozen=True)
class SandboxRequests:
    count: int
    requests: List[SandboxRequest]


@dataclasses.dataclass(frozen=True)
class UnmatchedRequest:
    at: str
    method: str
    path: str
    reason: UnmatchedReason
    closest_route: Optional[str]
    status: int


@dataclasses.dataclass(frozen=True)
class SandboxClockRequest:
    advance_ms: Optional[int] = None
    set: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class ClockEvent:
    kind: ClockEventKind
    id: str
    at: str


@dataclasses.dataclass(frozen=True)
class SandboxClockMove:
    """Where a sandbox's clock now is, and what moving it made happen."""

    now: str
    offset_ms: int
    happened: List[ClockEvent]


@dataclasses.dataclass(frozen=True)
class FaultRuleRequest:
    target: FaultTarget
    instance_id: Optional[str] = None
    path: Optional[str] = None
    method: Optional[str] = None
    status: Optional[int] = None
    error: Optional[FaultError] = None
    after_deltas: Optional[int] = None
    latency_ms: Optional[int] = None
    probability: Optional[float] = None
    times: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class FaultRule:
    """A fault rule as the emulator holds it: `remaining` firings (None: forever), `hits` so far."""

    target: FaultTarget
    id: str
    remaining: Optional[int]
    hits: int
    instance_id: Optional[str] = None
    path: Optional[str] = None
    method: Optional[str] = None
    status: Optional[int] = None
    error: Optional[FaultError] = None
    after_deltas: Optional[int] = None
    latency_ms: Optional[int] = None
    probability: Optional[float] = None
    times: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class ModelScriptView:
    scope: ScriptScope
    script: Optional[Dict[str, Any]]
    hits: Dict[str, int]
    instance_id: Optional[str] = None
    sandbox_id: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class TierRequest:
    tier: Tier


@dataclasses.dataclass(frozen=True)
class RecordingUsage:
    name: str
    file: str
    interactions: int
    used: int
    unused: List[int]


@dataclasses.dataclass(frozen=True)
class Recordings:
    mode: Optional[ReplayMode]
    recordings: List[RecordingUsage]


#: Every schema of the manifest, by its name there.
SCHEMAS: Dict[str, type] = {
    "SandboxCreateRequest": SandboxCreateRequest,
    "SandboxClock": SandboxClock,
    "Sandbox": SandboxInfo,
    "SandboxCreated": SandboxCreated,
    "SandboxRequests": SandboxRequests,
    "SandboxRequest": SandboxRequest,
    "UnmatchedRequest": UnmatchedRequest,
    "SandboxClockRequest": SandboxClockRequest,
    "ClockEvent": ClockEvent,
    "SandboxClockMove": SandboxClockMove,
    "FaultRuleRequest": FaultRuleRequest,
    "FaultRule": FaultRule,
    "ModelScriptView": ModelScriptView,
    "TierRequest": TierRequest,
    "RecordingUsage": RecordingUsage,
    "Recordings": Recordings,
}


def _check(hint: Any, value: Any, where: str) -> Any:
    """`value` converted to `hint` (dataclasses built, lists walked), or a TypeError naming `where`."""
    if hint is Any:
        return value
    origin = get_origin(hint)
    if origin is Union:
        if value is None and type(None) in get_args(hint):
            return None
        inner = [a for a in get_args(hint) if a is not type(None)]
        return _check(inner[0], value, where)
    if origin is Literal:
        if value not in get_args(hint):
            raise TypeError(f"{where}: {value!r} is not one of {', '.join(map(str, get_args(hint)))}")
        return value
    if origin in (list, List):
        if not isinstance(value, list):
            raise TypeError(f"{where}: expected a list, got {type(value).__name__}")
        return [_check(get_args(hint)[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
        return {k: _check(get_args(hint)[1], v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return _parse_into(hint, value, where)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{where}: expected an integer, got {value!r}")
    if not isinstance(value, hint):
        raise TypeError(f"{where}: expected {hint.__name__}, got {type(value).__name__}")
    return value


def _parse_into(cls: Type[T], value: Any, where: str) -> T:
    if not isinstance(value, dict):
        raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
    hints = get_type_hints(cls)
    args: Dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name not in value:
            if field.default is dataclasses.MISSING:
                raise TypeError(f"{where}.{field.name}: missing")
            continue
        args[field.name] = _check(hints[field.name], value[field.name], f"{where}.{field.name}")
    return cls(**args)


def parse(cls: Type[T], value: Any, call: str) -> T:
    """`value` (decoded JSON) as a `cls`; ControlPlaneError naming the field when it is not one."""
    try:
        return _parse_into(cls, value, "$")
    except TypeError as error:
        raise ControlPlaneError(call, None, f"the answer is not what the control plane's document says: {error}") from None


def to_json(body: Any) -> Any:
    """A request dataclass as the JSON object it sends: fields left at None are left out."""
    if dataclasses.is_dataclass(body):
        return {f.name: to_json(getattr(body, f.name)) for f in dataclasses.fields(body) if getattr(body, f.name) is not None}
    return body

