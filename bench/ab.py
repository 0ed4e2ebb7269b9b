"""A/B of two builds of our server, call for call, each call after one of the reference's.

    python3 bench/ab.py A B [N]

Starts A, B and the Python reference (target/ref-venv, see setup-reference.sh) in sandbox mode,
each on a fresh runs dir, then N times, alternating which build goes first: a new run_workflow,
its replay and get_run on one build, a new run on the reference, the same on the other build, a
new run on the reference. Both builds see the same idle gaps and the same minutes of this
machine, so their difference holds even when the machine's speed drifts between runs of
compare.py. Prints the medians.
"""
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import Server, fresh_request_id  # noqa: E402

REFERENCE = Path(__file__).resolve().parent.parent / "target/ref-venv/bin/openadapt-agent"


RUNS_DIRS: list[str] = []


def spawn(exe: str, name: str) -> Server:
    runs = tempfile.mkdtemp(prefix="ab-")
    RUNS_DIRS.append(runs)
    server = Server(name, [exe, "serve", "--sandbox-engine", "simulated", "--runs-dir", runs], runs)
    server.initialize()
    server.tools_list()
    server.new_run(fresh_request_id())
    return server


def main() -> None:
    a, b = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 150
    servers = {"A": spawn(a, "A"), "B": spawn(b, "B"), "reference": spawn(str(REFERENCE), "reference")}
    times = {k: {"new run": [], "replay": [], "get_run": []} for k in ("A", "B")}
    for i in range(n):
        for who in ("A", "B") if i % 2 == 0 else ("B", "A"):
            server, t = servers[who], times[who]
            request_id = fresh_request_id()
            took, run_id = server.new_run(request_id)
            t["new run"].append(took)
            t["replay"].append(server.replay(request_id, run_id))
            t["get_run"].append(server.get_run(run_id))
            servers["reference"].new_run(fresh_request_id())
    for who in ("A", "B"):
        medians = "  ".join(f"{what} {statistics.median(v) * 1e3:.3f} ms" for what, v in times[who].items())
        print(f"{who}: {medians}")
    for server in servers.values():
        server.close()
    for runs in RUNS_DIRS:
        shutil.rmtree(runs, ignore_errors=True)


if __name__ == "__main__":
    main()
