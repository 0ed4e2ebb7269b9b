#!/usr/bin/env bash
# Runs the real-Flow end-to-end tests: our server in production mode, through the `mcp` SDK,
# running the real `openadapt-flow run` (Playwright + Debian's chromium) against Flow's MockMed
# fault server. Sets everything up first (tests/flow/setup.sh, idempotent; as root on a fresh
# Debian machine it installs chromium and builds target/flow-venv from PyPI).
# Arguments go to pytest. OPENADAPT_AGENT_BIN picks the server (default: target/debug/openadapt-agent).
# FLOW_TEST_TUTORIAL_BUNDLE=DIR reuses a bundle made by `make-tutorial-bundle.sh --bind-params`
# instead of recording one (about 40 s).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"

bin="${OPENADAPT_AGENT_BIN:-$repo/target/debug/openadapt-agent}"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
if [ ! -x "$bin" ]; then
    echo "tests/flow: no server binary at $bin; run \`cargo build -p openadapt-agent\` or set OPENADAPT_AGENT_BIN" >&2
    exit 1
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
bash "$here/setup.sh" >/dev/null
# shellcheck source=/dev/null
. "$target/flow-env.sh"

export OPENADAPT_AGENT_BIN="$bin" PYTHONDONTWRITEBYTECODE=1
cd "$repo"
exec "$FLOW_PYTHON" -m pytest -p no:cacheprovider "$here/test_real_flow.py" "$@"
