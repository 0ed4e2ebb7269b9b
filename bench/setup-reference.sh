#!/usr/bin/env bash
# Creates a venv with the Python reference server (openadapt-agent 2.2.1 on openadapt-flow 2.4.0)
# and checks that it starts in sandbox mode with the simulated engine and answers a run.
# Usage: bench/setup-reference.sh [VENV_DIR]   (default: target/ref-venv in this repository)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
venv="${1:-$repo/target/ref-venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-reference.txt"

if ! command -v strace >/dev/null 2>&1; then
    echo "strace is missing: installing it (compare.py counts fsync-family calls with it)" >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq strace >/dev/null
    else echo "run: sudo apt-get install strace" >&2; fi
fi

# Smoke check: one new simulated run and its replay, over raw JSON-RPC on stdio.
"$venv/bin/python" - "$venv/bin/openadapt-agent" <<'PY'
import json, subprocess, sys, tempfile
with tempfile.TemporaryDirectory() as runs:
    p = subprocess.Popen([sys.argv[1], "serve", "--sandbox-engine", "simulated", "--runs-dir", runs],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    def ask(i, method, params):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        p.stdin.flush()
        while True:
            msg = json.loads(p.stdout.readline())
            if msg.get("id") == i:
                return msg
    ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "setup", "version": "1"}})
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    args = {"workflow": "add_triage_note", "request_id": "setup-check-0001",
            "inputs": {"note": "setup check", "sandbox_case": "normal"}, "wait_seconds": 60}
    first = ask(2, "tools/call", {"name": "run_workflow", "arguments": args})["result"]["structuredContent"]
    again = ask(3, "tools/call", {"name": "run_workflow", "arguments": args})["result"]["structuredContent"]
    p.stdin.close()
    p.wait(timeout=30)
    ok = (first["outcome"], first["reason"], first["sandbox"]["engine"]) == ("done", "saved_and_checked", "simulated") \
        and again.get("replayed") is True and again["run_id"] == first["run_id"]
    if not ok:
        sys.exit(f"the reference answered unexpectedly: {first} / {again}")
    print(f"reference OK: {sys.argv[1]} ran {first['run_id']} (done, simulated) and replayed it")
PY
