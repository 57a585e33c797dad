"""The pytest plugin (loaded by the `pytest11` entry point once the package is installed).

Fixtures:
- `agent_bridge` (session): the `Emulator`. One already running when `--agent-bridge-url` or
  `AGENT_BRIDGE_URL` names it (CI can share one, or run the container image); else started here
  from the `agent-bridge` command and stopped at the end. Under pytest-xdist the controller starts
  it once and every worker uses it.
- `agent_bridge_sandbox` (per test): a `Sandbox` of its own, removed after the test (also when it
  failed). `@pytest.mark.agent_bridge_recording("name")` names it after a recording, so an emulator
  started with `--agent-bridge-replay DIR` answers its requests from `DIR/name.recording.json`.
"""

import os
from typing import Any, Iterator, Optional

import pytest

from ._client import Emulator, Sandbox
from ._types import ControlPlaneError

URL_ENV = "AGENT_BRIDGE_URL"
#: The control plane's bearer token, when the emulator has one (the variable the emulator itself reads).
TOKEN_ENV = "EMULATOR_ADMIN_TOKEN"
REPLAY_MODES = ("strict", "record-if-missing", "passthrough")
MARKER = "agent_bridge_recording"
#: How the controller hands the URL (or why it could not start one) to pytest-xdist workers.
WORKER_URL = "agent_bridge_url"
WORKER_ERROR = "agent_bridge_error"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agent-bridge", "agent-bridge emulator")
    group.addoption("--agent-bridge-url", metavar="URL", help=f"use the emulator running at URL (default: ${URL_ENV}; without one, an emulator is started)")
    group.addoption(
        "--agent-bridge-command",
        metavar="COMMAND",
        help="the agent-bridge command that starts the emulator (default: $AGENT_BRIDGE_COMMAND, else agent-bridge on PATH, else npx agent-bridge)",
    )
    group.addoption("--agent-bridge-replay", metavar="DIR", help="start the emulator answering from the recordings in DIR")
    group.addoption("--agent-bridge-replay-mode", choices=REPLAY_MODES, help="what a request with no recording gets (default: strict under CI=true)")
    group.addoption("--agent-bridge-model-script", metavar="FILE", help="script the started emulator's fake model with FILE's rules")
    group.addoption("--agent-bridge-provision-ms", metavar="MS", type=int, help="how long a new instance provisions in the started emulator (default 0)")
    for name, what in (
        ("command", "the agent-bridge command"),
        ("replay", "the recordings folder, relative to the rootdir"),
        ("replay_mode", "the replay mode"),
        ("model_script", "the model script file, relative to the rootdir"),
        ("provision_ms", "how long provisioning takes, ms"),
    ):
        parser.addini(f"agent_bridge_{name}", f"agent-bridge: {what} (the --agent-bridge-* option wins)")


class _State:
    """The run's emulator, started or connected the first time a test needs it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.emulator: Optional[Emulator] = None
        self.owned = False
        self.report = ""

    def setting(self, name: str, path: bool = False) -> Optional[str]:
        given = self.config.getoption(f"agent_bridge_{name}")
        if given is not None:
            return str(given)
        ini = self.config.getini(f"agent_bridge_{name}")
        if not ini:
            return None
        return str(self.config.rootpath / str(ini)) if path else str(ini)

    def given_url(self) -> Optional[str]:
        return self.config.getoption("agent_bridge_url") or os.environ.get(URL_ENV) or None

    def get(self) -> Emulator:
        if self.emulator is not None:
            return self.emulator
        worker: Any = getattr(self.config, "workerinput", None)
        if worker is not None and worker.get(WORKER_ERROR):
            raise RuntimeError(f"the agent-bridge emulator could not be started for this run: {worker[WORKER_ERROR]}")
        url = (worker.get(WORKER_URL) if worker is not None else None) or self.given_url()
        token = os.environ.get(TOKEN_ENV) or None
        if url:
            self.emulator = Emulator.connect(url, admin_token=token)
            return self.emulator
        provision = self.setting("provision_ms")
        self.emulator = Emulator.start(
            command=self.setting("command"),
            provision_ms=int(provision) if provision else 0,
            model_script=self.setting("model_script", path=True),
            replay=self.setting("replay", path=True),
            replay_mode=self.setting("replay_mode"),
            admin_token=token,
        )
        self.owned = True
        return self.emulator

    def close(self) -> None:
        emulator, self.emulator = self.emulator, None
        if emulator is None or not self.owned:
            return
        if self.setting("replay") is not None:
            try:
                self.report = emulator.unused_recordings_report()
            except ControlPlaneError as error:
                self.report = f"recordings not used by this run: could not ask the emulator ({error})\n"
        emulator.close()


_STATE = pytest.StashKey[_State]()


class _XdistController:
    """pytest-xdist: the controller starts one emulator and hands its URL to every worker."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.error: Optional[str] = None

    def pytest_configure_node(self, node: Any) -> None:
        if self.state.given_url():
            return  # the workers read it as the controller did
        if self.error is None:
            try:
                node.workerinput[WORKER_URL] = self.state.get().url
                return
            except Exception as error:  # told to each worker, raised only where a test needs it
                self.error = str(error)
        node.workerinput[WORKER_ERROR] = self.error


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(name): the test's sandbox replays the recording NAME (agent-bridge emulator started with a replay folder)")
    state = _State(config)
    config.stash[_STATE] = state
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_XdistController(state), "agent-bridge-xdist")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    if state.owned and state.emulator is not None and not hasattr(config, "workerinput"):
        state.close()  # the xdist controller's emulator: every worker is done with it
    if state.report:
        terminalreporter.write_sep("-", "agent-bridge")
        terminalreporter.write(state.report)


@pytest.fixture(scope="session")
def agent_bridge(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """The run's emulator (its `url`; `create_sandbox()` for more sandboxes; `recordings()`)."""
    # Stopped at the end of the run (pytest_terminal_summary, pytest_unconfigure), after every worker.
    yield request.config.stash[_STATE].get()


@pytest.fixture
def agent_bridge_sandbox(agent_bridge: Emulator, request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """A sandbox of its own for this test, removed after it."""
    marker = request.node.get_closest_marker(MARKER)
    recording = str(marker.args[0]) if marker is not None and marker.args else None
    sandbox = agent_bridge.create_sandbox(name=recording or request.node.nodeid[-128:], recording=recording)
    yield sandbox
    sandbox.remove()
