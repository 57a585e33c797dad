"""The package's own tests run against a real emulator: the one AGENT_BRIDGE_URL names, or one the
plugin starts. The replay tests need an emulator started with `--agent-bridge-replay`."""

import pytest


def pytest_ignore_collect(collection_path, config: pytest.Config):
    if collection_path.name == "replay" and config.getoption("agent_bridge_replay") is None:
        return True
    return None
