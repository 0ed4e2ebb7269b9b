"""Shared fixtures of the Python black-box tests: the server binary under test and the async
backend of the anyio pytest plugin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def server_binary() -> Path:
    """The server under test: $OPENADAPT_AGENT_BIN, else the repository's debug build."""
    configured = os.environ.get("OPENADAPT_AGENT_BIN")
    path = Path(configured) if configured else REPO / "target" / "debug" / "openadapt-agent"
    return path.resolve()


@pytest.fixture(scope="session")
def server_bin() -> Path:
    path = server_binary()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"no server binary at {path}: run `cargo build -p openadapt-agent` or set OPENADAPT_AGENT_BIN",
            pytrace=False,
        )
    return path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
