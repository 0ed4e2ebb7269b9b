#!/usr/bin/env bash
# Runs the Python black-box tests of the MCP server (the `mcp` SDK in both of its modes, and raw
# stdio). Sets up their venv on first use: target/py-venv, from tests/python/requirements.txt.
# Arguments go to pytest. OPENADAPT_AGENT_BIN picks the server (default: target/debug/openadapt-agent).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/target/py-venv"
python="${PYTHON:-python3}"

bin="${OPENADAPT_AGENT_BIN:-$repo/target/debug/openadapt-agent}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
if [ ! -x "$bin" ]; then
    echo "tests/python: no server binary at $bin; run \`cargo build -p openadapt-agent\` or set OPENADAPT_AGENT_BIN" >&2
    exit 1
fi

# A venv counts once its pip runs; a half-made one (e.g. ensurepip was missing) is made again.
if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1; }; then
    mkdir -p "$(dirname "$venv")"
    if ! "$python" -m venv --clear "$venv"; then
        echo "tests/python: \`$python -m venv\` failed; on Debian install python3-venv first" >&2
        exit 1
    fi
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"

export OPENADAPT_AGENT_BIN="$bin" PYTHONDONTWRITEBYTECODE=1
cd "$repo"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$here" "$@"
