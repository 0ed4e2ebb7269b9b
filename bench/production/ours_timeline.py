#!/usr/bin/env python3
"""Where our server's time goes in one governed run, from strace timestamps.

    python3 bench/production/ours_timeline.py BUNDLES_DIR [--k 20] [--ours PATH]

Starts our server in production mode with the fast fake Flow (as compare_production.py does),
under `strace -f --seccomp-bpf -ttt -T` limited to a few syscalls (read, write, clone, execve,
wait4, exit_group, fsync, fdatasync), makes K runs of the first bundle, and splits each
run_workflow round trip, seen from inside the server, into:

  before_spawn  request line read -> fork of the Flow child (claim, records, params file)
  fork_exec     fork -> the child's execve
  fake          execve -> the fake's exit_group (the fake Flow's own time, traced)
  poll_lag      the fake's exit -> the server's wait4(WNOHANG) that sees it
  after         that wait4 -> the response line written (report, run record, answer)

plus the fsync-family calls and the time spent in them. Tracing slows every traced call, so
read the split as proportions, not as the untraced figures. Stdlib only; needs strace.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import compare_production as cp  # noqa: E402

SYSCALLS = "read,write,clone,clone3,vfork,execve,wait4,exit_group,fsync,fdatasync"
PHASES = ["before_spawn", "fork_exec", "fake", "poll_lag", "after", "total"]


def events(path: str):
    """(pid, start, end, text) per syscall, with unfinished/resumed pairs joined."""
    pending = {}
    for row in open(path).read().splitlines():
        m = re.match(r"(\d+) (\d+\.\d+) (.*)", row)
        if not m:
            continue
        pid, t, rest = int(m[1]), float(m[2]), m[3]
        if rest.endswith("<unfinished ...>"):
            pending[pid] = (t, rest[: -len("<unfinished ...>")])
            continue
        dur = re.search(r" <(\d+\.\d+)>$", rest)
        if dur:
            rest = rest[: dur.start()]
        r = re.match(r"<\.\.\. (\w+) resumed>(.*)", rest)
        if r and pid in pending:
            t0, head = pending.pop(pid)
            yield pid, t0, t0 + float(dur[1]) if dur else t, head + r[2]
            continue
        yield pid, t, t + float(dur[1]) if dur else t, rest


def split(path: str, fake: str) -> list[dict]:
    runs, cur, fake_pid = [], None, None
    for pid, t0, t1, s in events(path):
        if s.startswith("read(0,") and "run_workflow" in s:
            cur = {"req": t1, "fsync_s": 0.0, "fsyncs": 0}
            runs.append(cur)
            fake_pid = None
        if cur is None:
            continue
        if s.startswith(("fsync(", "fdatasync(")):
            cur["fsync_s"] += t1 - t0
            cur["fsyncs"] += 1
        elif s.startswith("clone(") and "SIGCHLD" in s and "spawn" not in cur:
            cur["spawn"] = t0
        elif s.startswith(f'execve("{fake}"'):
            cur["exec"], fake_pid = t0, pid
        elif s.startswith("exit_group") and pid == fake_pid and "exit" not in cur:
            cur["exit"] = t0
        elif s.startswith("wait4(") and "WNOHANG" in s and fake_pid and s.endswith(f"= {fake_pid}"):
            cur["detect"] = t1
        elif s.startswith('write(1, "{\\"jsonrpc') and "resp" not in cur:
            cur["resp"] = t1
    out = []
    for r in runs:
        if all(k in r for k in ("req", "spawn", "exec", "exit", "detect", "resp")):
            out.append({"before_spawn": r["spawn"] - r["req"], "fork_exec": r["exec"] - r["spawn"],
                        "fake": r["exit"] - r["exec"], "poll_lag": r["detect"] - r["exit"],
                        "after": r["resp"] - r["detect"], "total": r["resp"] - r["req"],
                        "fsync_s": r["fsync_s"], "fsyncs": r["fsyncs"]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundles")
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--ours", default=os.path.join(cp.REPO, "target", "release", "openadapt-agent"))
    ap.add_argument("--fake", default=os.path.join(HERE, "fast_fake_flow.sh"))
    ap.add_argument("--report", default=os.path.join(cp.REPO, "tests", "flow", "fixtures", "flow-run",
                                                     "verified_tutorial_inprocess", "report.json"))
    args = ap.parse_args()
    if shutil.which("strace") is None:
        ap.error("strace is not installed")
    tmp = tempfile.mkdtemp(prefix="openadapt-timeline-")
    try:
        runs_dir, home, trace = os.path.join(tmp, "runs"), os.path.join(tmp, "home"), os.path.join(tmp, "trace")
        os.makedirs(runs_dir)
        os.makedirs(home)
        argv = ["strace", "-f", "--seccomp-bpf", "-s", "300", "-ttt", "-T", "-e", f"trace={SYSCALLS}", "-o", trace,
                args.ours, "serve", "--mode", "production", "--bundles", os.path.abspath(args.bundles),
                "--flow-cli", f"{args.fake} {args.report}", "--approval-mode", "not_gated", "--runs-dir", runs_dir]
        env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"), OPENADAPT_AGENT_RUNS_DIR=runs_dir)
        s = cp.Server("ours", argv, env)
        s.initialize()
        _, wfs = s.request("tools/call", {"name": "list_workflows", "arguments": {}})
        name = wfs["result"]["structuredContent"]["workflows"][0]["name"]
        driver = [s.run(name) for _ in range(args.k)]
        s.close(timeout=60)
        rows = split(trace, args.fake)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not rows:
        print("no complete run found in the trace", file=sys.stderr)
        return 1
    print(f"{len(rows)} runs traced; driver round trip median {statistics.median(driver) * 1e3:.1f} ms")
    print("| phase | median | p90 |")
    print("|---|---|---|")
    for k in PHASES + ["fsync_s"]:
        xs = [r[k] for r in rows]
        print(f"| {k} | {statistics.median(xs) * 1e3:.2f} ms | {cp.p90(xs) * 1e3:.2f} ms |")
    print(f"| fsync-family calls per run | {statistics.median([r['fsyncs'] for r in rows]):.0f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
