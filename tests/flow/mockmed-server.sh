#!/usr/bin/env bash
# Serves Flow's MockMed app with its fault-injection API on 127.0.0.1:PORT,
# in the foreground, until SIGTERM/SIGINT. Prints "mockmed ready URL" on
# stdout once the port is bound (PORT 0 picks a free port; read it there).
#
#   . target/flow-env.sh; tests/flow/mockmed-server.sh 8731 &
#   curl -s http://127.0.0.1:8731/api/db            # {"records": [...], "rejected_writes": N}
#   curl -s -XPOST -d '{}' http://127.0.0.1:8731/api/reset
#   app entry for runs: http://127.0.0.1:8731/?fault=ok&idempotency=demo#tasks
set -euo pipefail
port="${1:?usage: mockmed-server.sh PORT}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${FLOW_PYTHON:-$here/../../target/flow-venv/bin/python}"
exec "$py" -u -c '
import signal, sys, threading
from openadapt_flow.mockmed.fault_server import serve

url, db, stop = serve(int(sys.argv[1]))
done = threading.Event()
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda *_: done.set())
print("mockmed ready", url, flush=True)
done.wait()
stop()
' "$port"
