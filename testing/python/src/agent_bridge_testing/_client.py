"""The emulator and its sandboxes over HTTP, with the standard library only.

`Emulator.start()` runs the `agent-bridge emulator` command (memory only, a free loopback port)
and `Emulator.connect(url)` uses one already running; `emulator.create_sandbox()` gives a test an
organization, a key, a clock, fault rules, a model script and a request journal of its own.
"""

import atexit
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._types import (
    ControlPlaneError,
    FaultRule,
    FaultRuleRequest,
    ModelScriptView,
    Recordings,
    SandboxClockMove,
    SandboxClockRequest,
    SandboxCreated,
    SandboxCreateRequest,
    SandboxInfo,
    SandboxRequest,
    SandboxRequests,
    TierRequest,
    UnmatchedRequest,
    parse,
    to_json,
)

#: The control-plane operations this package calls: operation id -> (method, path, success status).
#: The same as `control-plane.json` (the package's tests check it), whose operation ids are the
#: emulator's OpenAPI document's.
OPERATIONS: Dict[str, Tuple[str, str, int]] = {
    "adminCreateSandbox": ("POST", "/_emulator/sandboxes", 201),
    "adminGetSandbox": ("GET", "/_emulator/sandboxes/{sandbox_id}", 200),
    "adminDeleteSandbox": ("DELETE", "/_emulator/sandboxes/{sandbox_id}", 204),
    "adminResetSandbox": ("POST", "/_emulator/sandboxes/{sandbox_id}/reset", 200),
    "adminSandboxRequests": ("GET", "/_emulator/sandboxes/{sandbox_id}/requests", 200),
    "adminSandboxHar": ("GET", "/_emulator/sandboxes/{sandbox_id}/requests.har", 200),
    "adminSandboxUnmatched": ("GET", "/_emulator/sandboxes/{sandbox_id}/unmatched", 200),
    "adminSandboxClock": ("POST", "/_emulator/sandboxes/{sandbox_id}/clock", 200),
    "adminSandboxCreateFault": ("POST", "/_emulator/sandboxes/{sandbox_id}/faults", 201),
    "adminSetSandboxModelScript": ("PUT", "/_emulator/sandboxes/{sandbox_id}/model-script", 200),
    "adminClearSandboxModelScript": ("DELETE", "/_emulator/sandboxes/{sandbox_id}/model-script", 204),
    "adminSetTier": ("POST", "/_emulator/organizations/{organization_id}/tier", 200),
    "adminRecordings": ("GET", "/_emulator/recordings", 200),
    "adminHealth": ("GET", "/_emulator/health", 200),
}

#: The query parameters `requests`, `count` and `har` filter by (every given one must match).
FILTER_FIELDS = ("method", "path", "route", "status", "instance_id", "session")

#: The header that picks the recording a replaying emulator answers from.
RECORDING_HEADER = "x-agent-bridge-recording"
_RECORDING_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._ -]*$")
_LISTENING = re.compile(r"emulator listening on (http://\S+)")

#: How long a control-plane call may take, seconds.
TIMEOUT = 30.0


class Response:
    """An answer of the emulator's `/v1` API (`Sandbox.call`)."""

    def __init__(self, status: int, headers: Mapping[str, str], text: str) -> None:
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.text = text

    def json(self) -> Any:
        return json.loads(self.text)

    def __repr__(self) -> str:
        return f"Response({self.status}, {self.text[:200]!r})"


def _http(method: str, url: str, body: Any = None, headers: Optional[Mapping[str, str]] = None, timeout: float = TIMEOUT) -> Response:
    data = None if body is None else json.dumps(body).encode()
    all_headers = {"accept": "application/json", **(headers or {})}
    if data is not None:
        all_headers["content-type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return Response(res.status, dict(res.headers.items()), res.read().decode())
    except urllib.error.HTTPError as error:
        return Response(error.code, dict(error.headers.items()), error.read().decode())


class _ControlPlane:
    """Calls the control plane by operation id and parses the answer with its type."""

    def __init__(self, url: str, admin_token: Optional[str]) -> None:
        self.url = url.rstrip("/")
        self._headers = {"authorization": f"Bearer {admin_token}"} if admin_token else {}

    def call(self, operation: str, params: Optional[Mapping[str, str]] = None, query: Optional[Mapping[str, Any]] = None, body: Any = None) -> Any:
        method, template, status = OPERATIONS[operation]
        path = template.format(**{k: urllib.parse.quote(v, safe="") for k, v in (params or {}).items()})
        shown = f"{method} {path}"
        pairs = [(k, str(v)) for k, v in (query or {}).items() if v is not None]
        url = self.url + path + (f"?{urllib.parse.urlencode(pairs)}" if pairs else "")
        try:
            res = _http(method, url, to_json(body), self._headers)
        except (OSError, urllib.error.URLError) as error:
            raise ControlPlaneError(shown, None, f"the emulator at {self.url} did not answer: {error}") from None
        if res.status != status:
            raise ControlPlaneError(shown, res.status, res.text)
        return None if status == 204 else res.json()


def _filter(fields: Mapping[str, Any]) -> Dict[str, Any]:
    unknown = sorted(set(fields) - set(FILTER_FIELDS))
    if unknown:
        raise TypeError(f"unknown request filter {', '.join(unknown)}: filter by {', '.join(FILTER_FIELDS)}")
    return {k: v for k, v in fields.items() if v is not None}


def _describe_filter(fields: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={json.dumps(v)}" for k, v in fields.items()) or "any request"


def _describe_seen(seen: Sequence[SandboxRequest]) -> str:
    if not seen:
        return "It received no request."
    lines = [f"  {r.method} {r.path} -> {r.status}" + (f" ({r.route})" if r.route else "") for r in seen[-20:]]
    more = f"\n  (and {len(seen) - 20} earlier)" if len(seen) > 20 else ""
    return "It received:\n" + "\n".join(lines) + more


class Sandbox:
    """One test's sandbox: its own organization and key, clock, fault rules, model script and journal.

    `url` and `api_key` are what the code under test needs (`Authorization: Bearer <api_key>`);
    `headers` holds that header (and a recording's header). Every method is one control-plane call.
    """

    def __init__(self, control: _ControlPlane, created: SandboxCreated, recording: Optional[str] = None) -> None:
        self._control = control
        self._params = {"sandbox_id": created.id}
        self.id = created.id
        self.name = created.name
        self.api_key = created.api_key
        self.organization_id = created.organization_id
        self.url = control.url
        self.recording = recording
        self.created = created

    @property
    def headers(self) -> Dict[str, str]:
        """`Authorization` with the sandbox's key, and the recording header when it replays one."""
        headers = {"authorization": f"Bearer {self.api_key}"}
        if self.recording is not None:
            headers[RECORDING_HEADER] = self.recording
        return headers

    def instance_url(self, instance_id: str) -> str:
        """An instance's base URL: an OpenAI client pointed here posts to its `/responses`."""
        return f"{self.url}/v1/instances/{urllib.parse.quote(instance_id, safe='')}"

    def session_url(self, instance_id: str, session: str) -> str:
        """A named session's base URL, for an OpenAI client (`OpenAI(base_url=..., api_key=sandbox.api_key)`)."""
        return f"{self.instance_url(instance_id)}/session/{urllib.parse.quote(session, safe='')}"

    def call(self, method: str, path: str, json_body: Any = None, headers: Optional[Mapping[str, str]] = None) -> Response:
        """A request to the emulator's `/v1` API with this sandbox's key; the answer whatever its status."""
        return _http(method, self.url + path, json_body, {**self.headers, **(headers or {})})

    # The journal

    def requests(self, **filter: Any) -> List[SandboxRequest]:
        """What the sandbox received, oldest first; every given field must match (`route` is the operation id)."""
        answer = self._control.call("adminSandboxRequests", self._params, _filter(filter))
        return parse(SandboxRequests, answer, "adminSandboxRequests").requests

    def count(self, **filter: Any) -> int:
        """How many requests match (all it received without a filter)."""
        answer = self._control.call("adminSandboxRequests", self._params, _filter(filter))
        return parse(SandboxRequests, answer, "adminSandboxRequests").count

    def unmatched(self) -> List[UnmatchedRequest]:
        """Its requests that matched nothing: an unknown route, a wrong method, an unknown key."""
        answer = self._control.call("adminSandboxUnmatched", self._params)
        if not isinstance(answer, list):
            raise ControlPlaneError("adminSandboxUnmatched", None, "the answer is not a list")
        return [parse(UnmatchedRequest, a, "adminSandboxUnmatched") for a in answer]

    def har(self, **filter: Any) -> Dict[str, Any]:
        """Its requests as an HTTP Archive (HAR 1.2), filtered like `requests`."""
        answer = self._control.call("adminSandboxHar", self._params, _filter(filter))
        if not isinstance(answer, dict):
            raise ControlPlaneError("adminSandboxHar", None, "the answer is not a JSON object")
        return answer

    def assert_received(self, times: Optional[int] = None, **filter: Any) -> List[SandboxRequest]:
        """Fails unless a matching request arrived (exactly `times` of them, when given); returns them."""
        matching = self.requests(**filter)
        if (len(matching) > 0) if times is None else (len(matching) == times):
            return matching
        everything = self.requests()
        wanted = _describe_filter(_filter(filter))
        if times is None:
            message = f"expected sandbox {self.id} to have received {wanted}. {_describe_seen(everything)}"
        else:
            message = f"expected sandbox {self.id} to have received {wanted} {times} time(s), it received it {len(matching)} time(s). {_describe_seen(everything)}"
        raise AssertionError(message)

    def assert_not_received(self, **filter: Any) -> None:
        """Fails if a matching request arrived."""
        self.assert_received(0, **filter)

    def assert_no_unmatched_requests(self) -> None:
        """Fails if a request of the sandbox matched nothing, naming each with the closest route."""
        unmatched = self.unmatched()
        if unmatched:
            lines = "\n".join(
                f"  {u.method} {u.path}: {u.reason}" + (f" (closest route: {u.closest_route})" if u.closest_route else "") for u in unmatched
            )
            raise AssertionError(f"expected sandbox {self.id} to have no unmatched requests, it has {len(unmatched)}:\n{lines}")

    # Its world

    def advance(self, ms: Union[int, datetime.timedelta]) -> SandboxClockMove:
        """Moves its clock forward; returns what the move made happen (instances running, keys expired)."""
        millis = int(ms.total_seconds() * 1000) if isinstance(ms, datetime.timedelta) else ms
        answer = self._control.call("adminSandboxClock", self._params, body=SandboxClockRequest(advance_ms=millis))
        return parse(SandboxClockMove, answer, "adminSandboxClock")

    def set_clock(self, to: Union[str, datetime.datetime]) -> SandboxClockMove:
        """Sets its clock to a later time (an aware datetime, or ISO 8601 in UTC ending in Z)."""
        if isinstance(to, datetime.datetime):
            if to.tzinfo is None:
                raise ValueError("set_clock needs an aware datetime (tzinfo=datetime.timezone.utc)")
            to = to.astimezone(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        answer = self._control.call("adminSandboxClock", self._params, body=SandboxClockRequest(set=to))
        return parse(SandboxClockMove, answer, "adminSandboxClock")

    def add_fault(self, target: str, **rule: Any) -> FaultRule:
        """A fault rule that fires on this sandbox's requests only (`target`: api, gateway or provision)."""
        answer = self._control.call("adminSandboxCreateFault", self._params, body=FaultRuleRequest(target=target, **rule))  # type: ignore[arg-type]
        return parse(FaultRule, answer, "adminSandboxCreateFault")

    def set_model_script(self, script: Mapping[str, Any]) -> ModelScriptView:
        """Scripts the fake model for its instances (`{"rules": [...]}`, docs/api-contract.md)."""
        answer = self._control.call("adminSetSandboxModelScript", self._params, body=dict(script))
        return parse(ModelScriptView, answer, "adminSetSandboxModelScript")

    def clear_model_script(self) -> None:
        self._control.call("adminClearSandboxModelScript", self._params)

    def set_tier(self, tier: str) -> None:
        """Moves its organization to another plan (`shrimp` allows 1 instance, `crab` 10, `lobster` 500)."""
        self._control.call("adminSetTier", {"organization_id": self.organization_id}, body=TierRequest(tier=tier))  # type: ignore[arg-type]

    def info(self) -> SandboxInfo:
        return parse(SandboxInfo, self._control.call("adminGetSandbox", self._params), "adminGetSandbox")

    def reset(self) -> SandboxInfo:
        """Back to how it was created: its instances, journal, faults and clock go; its key stays."""
        return parse(SandboxInfo, self._control.call("adminResetSandbox", self._params), "adminResetSandbox")

    def remove(self) -> None:
        """Removes the sandbox and everything in it, nothing else."""
        self._control.call("adminDeleteSandbox", self._params)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r}, name={self.name!r}, url={self.url!r})"


def default_command() -> List[str]:
    """How the emulator is started: `AGENT_BRIDGE_COMMAND`, else `agent-bridge` on PATH, else `npx agent-bridge`."""
    configured = os.environ.get("AGENT_BRIDGE_COMMAND")
    if configured:
        return shlex.split(configured)
    installed = shutil.which("agent-bridge")
    if installed:
        return [installed]
    npx = shutil.which("npx")
    if npx:
        return [npx, "agent-bridge"]
    raise FileNotFoundError(
        "agent-bridge is not installed: npm install --save-dev agent-bridge (then it runs as `npx agent-bridge`), "
        "or set AGENT_BRIDGE_URL to an emulator already running, or AGENT_BRIDGE_COMMAND to the command that starts one"
    )


#: Runs the command as a shell's child, in the process group the shell leads. The emulator may be a
#: grandchild (`npx agent-bridge` runs it from npm, which does not pass every signal on), so the
#: shell answers a SIGTERM by passing it to the whole group.
_SUPERVISOR = """trap 'trap "" TERM; kill -TERM 0; exit 143' TERM
"$@" &
wait $!"""


def _die_with_parent() -> Optional[Callable[[], None]]:
    """On Linux, a function for the child to run before exec: its parent's death sends it SIGTERM, so
    an interpreter killed without running close() (or atexit) still stops the emulator. Only from
    the main thread: Linux sends the signal when the thread that started the child ends."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_parent_death_signal() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the call: no signal will come
            os.kill(os.getpid(), signal.SIGTERM)

    return set_parent_death_signal


def _spawn(args: List[str], env: Dict[str, str]) -> "subprocess.Popen[str]":
    """Starts the emulator's command in a process group of its own (POSIX), under the supervisor
    shell on Linux, so `_signal` reaches every process it starts."""
    if shutil.which(args[0]) is None:
        raise FileNotFoundError(2, "No such file or directory", args[0])  # as Popen says it
    options: Dict[str, Any] = dict(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if os.name != "posix":
        return subprocess.Popen(args, **options)
    preexec = _die_with_parent()
    if preexec is not None:
        return subprocess.Popen(["/bin/sh", "-c", _SUPERVISOR, "agent-bridge", *args], start_new_session=True, preexec_fn=preexec, **options)
    return subprocess.Popen(args, start_new_session=True, **options)


def _signal(process: "subprocess.Popen[str]", sig: int) -> None:
    """Sends `sig` to the emulator's process group (to the process alone where there are none)."""
    if os.name != "posix":
        process.kill() if sig == getattr(signal, "SIGKILL", None) else process.terminate()
        return
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass  # all of it has exited


class Emulator:
    """An emulator this package started (`start`) or one already running (`connect`)."""

    def __init__(self, url: str, admin_token: Optional[str] = None, process: Optional["subprocess.Popen[str]"] = None, output: Optional[Deque[str]] = None) -> None:
        self.url = url.rstrip("/")
        self._control = _ControlPlane(self.url, admin_token)
        self._process = process
        self._output = output if output is not None else deque(maxlen=200)

    @classmethod
    def connect(cls, url: str, admin_token: Optional[str] = None) -> "Emulator":
        """An emulator already running at `url` (nothing to stop at close); checks that it answers."""
        emulator = cls(url, admin_token)
        emulator._control.call("adminHealth")
        return emulator

    @classmethod
    def start(
        cls,
        command: Union[None, str, Sequence[str]] = None,
        provision_ms: int = 0,
        seed: Optional[str] = None,
        model_script: Optional[str] = None,
        replay: Optional[str] = None,
        replay_mode: Optional[str] = None,
        admin_token: Optional[str] = None,
        timeout: float = 60.0,
    ) -> "Emulator":
        """Starts `agent-bridge emulator` in memory on a free loopback port; returns once it listens.

        `command` is the `agent-bridge` command (a list, or a string split like a shell would);
        default: `default_command()`. `replay` is a folder of recordings (`--replay`).
        """
        base = default_command() if command is None else (shlex.split(command) if isinstance(command, str) else list(command))
        args = [*base, "emulator", "--port", "0", "--in-memory", "--provision-ms", str(provision_ms)]
        if seed is not None:
            args += ["--seed", seed]
        if model_script is not None:
            args += ["--model-script", model_script]
        if replay is not None:
            args += ["--replay", replay]
        if replay_mode is not None:
            args += ["--replay-mode", replay_mode]
        env = dict(os.environ)
        if admin_token is not None:
            env["EMULATOR_ADMIN_TOKEN"] = admin_token  # kept out of the process list
        else:
            admin_token = env.get("EMULATOR_ADMIN_TOKEN") or None  # the emulator inherits it: the client needs it too
        process = _spawn(args, env)
        output: Deque[str] = deque(maxlen=200)
        found: Dict[str, str] = {}
        listening = threading.Event()

        def drain() -> None:
            # Reads every line for as long as it runs, so a full pipe never blocks the emulator.
            assert process.stdout is not None
            for line in process.stdout:
                output.append(line)
                match = _LISTENING.search(line)
                if match and not listening.is_set():
                    found["url"] = match.group(1)
                    listening.set()
            listening.set()

        threading.Thread(target=drain, name="agent-bridge-emulator-output", daemon=True).start()
        listening.wait(timeout)
        if "url" not in found:
            _signal(process, signal.SIGKILL)
            process.wait()
            raise RuntimeError(f"{shlex.join(args)} did not start (exit code {process.returncode}):\n{''.join(output)[-2000:]}")
        emulator = cls(found["url"], admin_token, process, output)
        # An interpreter that exits without close() (an uncaught KeyboardInterrupt) still stops it.
        atexit.register(emulator.close)
        return emulator

    def create_sandbox(
        self,
        name: Optional[str] = None,
        clock_start: Optional[str] = None,
        fixtures: Optional[Mapping[str, Any]] = None,
        recording: Optional[str] = None,
    ) -> Sandbox:
        """A new sandbox (`POST /_emulator/sandboxes`). With `recording`, it is named after the
        recording, so a replaying emulator answers its requests from `<recording>.recording.json`."""
        if recording is not None:
            if len(recording) > 128 or not _RECORDING_NAME.match(recording):
                raise ValueError(f"{recording!r} cannot name a recording: letters, digits, '.', '_', '-' and spaces, starting with a letter or digit")
            name = recording
        body = SandboxCreateRequest(name=name, clock_start=clock_start, fixtures=dict(fixtures) if fixtures is not None else None)
        created = parse(SandboxCreated, self._control.call("adminCreateSandbox", body=body), "adminCreateSandbox")
        return Sandbox(self._control, created, recording)

    def recordings(self) -> Recordings:
        """How much of each recording this emulator has served (`GET /_emulator/recordings`)."""
        return parse(Recordings, self._control.call("adminRecordings"), "adminRecordings")

    def unused_recordings_report(self) -> str:
        """Lines naming each recording no test used and recorded requests never replayed; empty when all were."""
        lines = []
        for r in self.recordings().recordings:
            if r.interactions > 0 and r.used == 0:
                lines.append(f"  {r.name} ({r.file}): no test used it")
            elif r.unused:
                lines.append(f"  {r.name} ({r.file}): request(s) #{', #'.join(map(str, r.unused))} of {r.interactions} never replayed")
        return "recordings not used by this run:\n" + "\n".join(lines) + "\n" if lines else ""

    @property
    def output(self) -> str:
        """The last lines the emulator this package started printed (empty for one connected to)."""
        return "".join(self._output)

    def close(self) -> None:
        """Stops the emulator if this package started it, and what it started (SIGTERM to its process
        group, then SIGKILL after 10 s)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        _signal(process, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> "Emulator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Emulator(url={self.url!r})"

