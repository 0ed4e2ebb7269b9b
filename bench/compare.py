#!/usr/bin/env python3
"""Side-by-side benchmark: our Rust MCP stdio server against the Python reference.

Both servers run in sandbox mode with the simulated engine and get exactly the same bytes:
line-delimited JSON-RPC over the child's stdin/stdout, no MCP library in between. Every
measurement is interleaved (ours, reference, ours, reference, ...) so both see the same machine
load, and every server process gets its own fresh runs directory.

Phases:
  warm-up   one session per server, discarded (warms the page cache for both and fills our
            precompiled-engine cache, which persists across real starts too)
  A         N times: spawn -> initialize response (cold start), tools/list, then the first
            run_workflow of that process
  B         one long session per server: N times a new run_workflow, its replay, and get_run of
            the finished run; then VmHWM of the server process just before stdin is closed
  C         fsync-family syscalls per new run: strace -f -c over a session of K new runs minus a
            session of 1 run, divided by K - 1 (so what a fresh runs dir costs once, such as
            creating its fingerprint key on the first run, is not charged to every run)
  floor     the same round trip against `cat` (echoes the line back): what the pipe and this
            driver cost by themselves

Stdlib only. Linux only (reads /proc, uses strace).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

PROTOCOL_VERSION = "2025-06-18"
WORKFLOW = "add_triage_note"
FSYNC_FAMILY = ["fsync", "fdatasync", "sync_file_range", "syncfs", "sync"]


def line(obj: dict) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def initialize_msg(msg_id: int) -> bytes:
    return line(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "openadapt-bench", "version": "1"},
            },
        }
    )


INITIALIZED = line({"jsonrpc": "2.0", "method": "notifications/initialized"})


def call_msg(msg_id: int, name: str, arguments: dict) -> bytes:
    return line({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})


def run_args(request_id: str) -> dict:
    return {
        "workflow": WORKFLOW,
        "request_id": request_id,
        "inputs": {"note": "Patient reports mild headache since this morning.", "sandbox_case": "normal"},
        "wait_seconds": 60,
    }


class BenchError(RuntimeError):
    pass


class Server:
    """One server process speaking line-delimited JSON-RPC on its stdio."""

    def __init__(self, name: str, argv: list[str], runs_dir: str, strace_out: str | None = None):
        self.name = name
        self.runs_dir = runs_dir
        self.next_id = 1
        env = dict(os.environ)
        env["OPENADAPT_AGENT_SANDBOX_DIR"] = runs_dir
        env["OPENADAPT_AGENT_RUNS_DIR"] = runs_dir
        cmd = list(argv)
        if strace_out is not None:
            cmd = ["strace", "-f", "-c", "-o", strace_out, "-e", "trace=" + ",".join(FSYNC_FAMILY), *cmd]
        self.stderr = tempfile.TemporaryFile()
        self.t_spawn = time.perf_counter_ns()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env)

    def _id(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i

    def _send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _recv(self, msg_id: int) -> dict:
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                self.stderr.seek(0)
                err = self.stderr.read().decode(errors="replace")[-2000:]
                raise BenchError(f"{self.name}: server closed stdout (exit {self.proc.poll()}); stderr:\n{err}")
            msg = json.loads(raw)
            if msg.get("id") == msg_id and ("result" in msg or "error" in msg):
                return msg
            # notifications or server-to-client requests: not ours to time, skip

    def request(self, method: str | None = None, params: dict | None = None, data: bytes | None = None) -> tuple[float, dict]:
        """Sends one request and returns (seconds from write to the full response line, response)."""
        msg_id = self._id()
        if data is None:
            obj = {"jsonrpc": "2.0", "id": msg_id, "method": method}
            if params is not None:
                obj["params"] = params
            data = line(obj)
        t0 = time.perf_counter_ns()
        self._send(data)
        msg = self._recv(msg_id)
        dt = (time.perf_counter_ns() - t0) / 1e9
        if "error" in msg:
            raise BenchError(f"{self.name}: {method or 'request'} answered a JSON-RPC error: {msg['error']}")
        return dt, msg

    def initialize(self) -> float:
        """Spawn -> initialize response received, in seconds (the spawn was timed in __init__)."""
        msg_id = self._id()
        self._send(initialize_msg(msg_id))
        msg = self._recv(msg_id)
        dt = (time.perf_counter_ns() - self.t_spawn) / 1e9
        if "error" in msg:
            raise BenchError(f"{self.name}: initialize failed: {msg['error']}")
        self._send(INITIALIZED)
        return dt

    def tools_list(self) -> float:
        dt, msg = self.request("tools/list", {})
        names = [t["name"] for t in msg["result"]["tools"]]
        for needed in ("run_workflow", "get_run"):
            if needed not in names:
                raise BenchError(f"{self.name}: tools/list lacks {needed}: {names}")
        return dt

    def call(self, name: str, arguments: dict) -> tuple[float, dict]:
        msg_id = self._id()
        t0 = time.perf_counter_ns()
        self._send(call_msg(msg_id, name, arguments))
        msg = self._recv(msg_id)
        dt = (time.perf_counter_ns() - t0) / 1e9
        if "error" in msg:
            raise BenchError(f"{self.name}: {name} answered a JSON-RPC error: {msg['error']}")
        res = msg["result"]
        if res.get("isError"):
            raise BenchError(f"{self.name}: {name} answered isError: {json.dumps(res)[:500]}")
        return dt, res.get("structuredContent") or {}

    def new_run(self, request_id: str) -> tuple[float, str]:
        dt, sc = self.call("run_workflow", run_args(request_id))
        check(self.name, "new run", sc, outcome="done", reason="saved_and_checked", replayed=None)
        return dt, sc["run_id"]

    def replay(self, request_id: str, run_id: str) -> float:
        dt, sc = self.call("run_workflow", run_args(request_id))
        check(self.name, "replay", sc, outcome="done", reason="saved_and_checked", replayed=True)
        if sc.get("run_id") != run_id:
            raise BenchError(f"{self.name}: replay answered run {sc.get('run_id')}, expected {run_id}")
        return dt

    def get_run(self, run_id: str) -> float:
        dt, sc = self.call("get_run", {"run_id": run_id})
        check(self.name, "get_run", sc, outcome="done", reason="saved_and_checked", replayed=None)
        if sc.get("run_id") != run_id:
            raise BenchError(f"{self.name}: get_run answered run {sc.get('run_id')}, expected {run_id}")
        return dt

    def vm_hwm_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for row in f:
                if row.startswith("VmHWM:"):
                    return int(row.split()[1])
        raise BenchError(f"{self.name}: no VmHWM in /proc/{self.proc.pid}/status")

    def close(self, timeout: float = 30.0) -> int:
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()
        return rc


def check(server: str, what: str, sc: dict, outcome: str, reason: str, replayed: bool | None) -> None:
    if sc.get("outcome") != outcome or sc.get("reason") != reason:
        raise BenchError(f"{server}: {what} answered {sc.get('outcome')}/{sc.get('reason')}, expected {outcome}/{reason}")
    if replayed is None and sc.get("replayed"):
        raise BenchError(f"{server}: {what} was a replay; expected a fresh answer")
    if replayed is True and sc.get("replayed") is not True:
        raise BenchError(f"{server}: {what} lacks replayed: true")


def fresh_request_id() -> str:
    return "bench-" + uuid.uuid4().hex


# ---------------------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.tmp_root = tempfile.mkdtemp(prefix="openadapt-bench-", dir=args.tmp_dir)
        self.servers = {
            "ours": [args.ours, "serve", "--sandbox-engine", "simulated"],
            "reference": [args.reference, "serve", "--sandbox-engine", "simulated"],
        }
        self.order = ["ours", "reference"]
        self.n_dirs = 0

    def runs_dir(self, who: str) -> str:
        self.n_dirs += 1
        d = os.path.join(self.tmp_root, f"{self.n_dirs:04d}-{who}")
        os.makedirs(d, mode=0o700)
        return d

    def spawn(self, who: str, strace_out: str | None = None) -> Server:
        d = self.runs_dir(who)
        return Server(who, self.servers[who] + ["--runs-dir", d], d, strace_out)

    def log(self, msg: str) -> None:
        if not self.args.quiet:
            print(msg, file=sys.stderr, flush=True)

    def warm_up(self) -> dict:
        out = {}
        for who in self.order:
            s = self.spawn(who)
            cold = s.initialize()
            s.tools_list()
            first, _ = s.new_run(fresh_request_id())
            s.close()
            out[who] = {"cold_start_s": cold, "first_run_s": first}
            self.log(f"warm-up {who}: cold start {cold * 1e3:.1f} ms, first run {first * 1e3:.1f} ms")
        return out

    def phase_a(self) -> dict:
        res = {who: {"cold_start_s": [], "tools_list_s": [], "first_run_s": []} for who in self.order}
        for i in range(self.args.n):
            for who in self.order:
                s = self.spawn(who)
                res[who]["cold_start_s"].append(s.initialize())
                res[who]["tools_list_s"].append(s.tools_list())
                res[who]["first_run_s"].append(s.new_run(fresh_request_id())[0])
                s.close()
            self.log(f"A {i + 1}/{self.args.n}: cold start ours {res['ours']['cold_start_s'][-1] * 1e3:.1f} ms, "
                     f"reference {res['reference']['cold_start_s'][-1] * 1e3:.1f} ms")
        return res

    def phase_b(self) -> dict:
        res = {who: {"new_run_s": [], "replay_s": [], "get_run_s": []} for who in self.order}
        sessions = {}
        for who in self.order:
            s = self.spawn(who)
            s.initialize()
            s.tools_list()
            sessions[who] = s
        for i in range(self.args.n):
            for who in self.order:
                s = sessions[who]
                rid = fresh_request_id()
                dt, run_id = s.new_run(rid)
                res[who]["new_run_s"].append(dt)
                res[who]["replay_s"].append(s.replay(rid, run_id))
                res[who]["get_run_s"].append(s.get_run(run_id))
        self.log(f"B: {self.args.n} new runs, replays and get_runs per server done")
        for who in self.order:
            s = sessions[who]
            res[who]["vm_hwm_kib"] = s.vm_hwm_kib()
            res[who]["runs_in_session"] = self.args.n
            s.close()
        return res

    def strace_session(self, who: str, k: int) -> dict:
        out = os.path.join(self.tmp_root, f"strace-{who}-{k}-{uuid.uuid4().hex[:8]}.txt")
        s = self.spawn(who, strace_out=out)
        s.initialize()
        s.tools_list()
        for _ in range(k):
            s.new_run(fresh_request_id())
        s.close(timeout=60)
        with open(out) as f:
            return parse_strace_c(f.read())

    def phase_c(self) -> dict:
        k = self.args.k
        res = {}
        rounds = {who: [] for who in self.order}
        for r in range(self.args.strace_rounds):
            for who in self.order:
                with_k = self.strace_session(who, k)
                with_1 = self.strace_session(who, 1)
                per_run = (sum(with_k.values()) - sum(with_1.values())) / (k - 1)
                rounds[who].append({"k_runs": with_k, "one_run": with_1, "per_run": per_run})
            self.log(f"C {r + 1}/{self.args.strace_rounds}: fsync-family per run ours "
                     f"{rounds['ours'][-1]['per_run']:.2f}, reference {rounds['reference'][-1]['per_run']:.2f}")
        for who in self.order:
            res[who] = {"k": k, "rounds": rounds[who], "per_run": [x["per_run"] for x in rounds[who]]}
        return res

    def floor(self) -> dict:
        """Round trip of a run_workflow-sized line through `cat`: the pipe plus this driver."""
        cat = shutil.which("cat")
        proc = subprocess.Popen([cat], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        samples = []
        for i in range(max(self.args.n, 30)):
            data = line({"jsonrpc": "2.0", "id": i, "result": run_args(fresh_request_id())})
            t0 = time.perf_counter_ns()
            proc.stdin.write(data)
            proc.stdin.flush()
            json.loads(proc.stdout.readline())
            samples.append((time.perf_counter_ns() - t0) / 1e9)
        proc.stdin.close()
        proc.wait()
        return {"echo_round_trip_s": samples}

    def run(self) -> dict:
        started = datetime.datetime.now(datetime.timezone.utc)
        result = {
            "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
            "date_utc": started.isoformat(timespec="seconds"),
            "uname_r": platform.release(),
            "nproc": os.cpu_count(),
            "loadavg_start": os.getloadavg(),
            "tmp_root": self.tmp_root,
            "servers": {who: self.servers[who] for who in self.order},
            "versions": versions(self.args),
            "n": self.args.n,
            "k": self.args.k,
        }
        result["floor"] = self.floor()
        result["warm_up"] = self.warm_up()
        result["phase_a"] = self.phase_a()
        result["phase_b"] = self.phase_b()
        if self.args.k > 0 and self.args.strace_rounds > 0:
            result["phase_c"] = self.phase_c()
        result["loadavg_end"] = os.getloadavg()
        result["seconds_total"] = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
        if not self.args.keep:
            shutil.rmtree(self.tmp_root, ignore_errors=True)
        return result


def versions(args: argparse.Namespace) -> dict:
    out = {}
    for who, exe in (("ours", args.ours), ("reference", args.reference)):
        try:
            p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
            out[who] = (p.stdout or p.stderr).strip()
        except OSError as e:
            out[who] = f"unknown ({e})"
    return out


STRACE_ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?(\w+)\s*$")


def parse_strace_c(text: str) -> dict:
    """Calls per syscall from `strace -c` output (the total row left out)."""
    calls = {}
    for row in text.splitlines():
        m = STRACE_ROW.match(row)
        if m and m.group(3) != "total":
            calls[m.group(3)] = int(m.group(1))
    return calls


# ---------------------------------------------------------------------------------------------


def median(xs):
    return statistics.median(xs)


def p90(xs):
    if len(xs) < 2:
        return xs[0]
    return statistics.quantiles(xs, n=10, method="inclusive")[8]


def fmt_ms(s: float) -> str:
    ms = s * 1e3
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms:.3f} ms"


def fmt_count(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def timing_cells(a: list, b: list) -> tuple[str, str, str]:
    ma, mb = median(a), median(b)
    return (
        f"{fmt_ms(ma)} (p90 {fmt_ms(p90(a))})",
        f"{fmt_ms(mb)} (p90 {fmt_ms(p90(b))})",
        f"{mb / ma:.1f}×" if ma > 0 else "n/a",
    )


def table(result: dict) -> str:
    a, b = result["phase_a"], result["phase_b"]
    n = result["n"]
    rows = [
        ("Cold start: spawn → initialize response", "cold_start_s", a),
        ("`tools/list` round trip", "tools_list_s", a),
        ("First `run_workflow` of a fresh process", "first_run_s", a),
        (f"New `run_workflow` (fresh request_id, normal), in a session of {n}", "new_run_s", b),
        ("Replay (same request_id again)", "replay_s", b),
        ("`get_run` of a finished run", "get_run_s", b),
    ]
    out = ["| metric | ours | reference | ratio (reference/ours) |", "|---|---|---|---|"]
    for label, key, src in rows:
        c = timing_cells(src["ours"][key], src["reference"][key])
        out.append(f"| {label} | {c[0]} | {c[1]} | {c[2]} |")
    ho, hr = b["ours"]["vm_hwm_kib"], b["reference"]["vm_hwm_kib"]
    out.append(f"| Peak RSS (VmHWM) after a session of {n} runs | {ho / 1024:.1f} MiB | {hr / 1024:.1f} MiB | {hr / ho:.1f}× |")
    if "phase_c" in result:
        c = result["phase_c"]
        fo, fr = median(c["ours"]["per_run"]), median(c["reference"]["per_run"])
        rounds = len(c["ours"]["per_run"])
        label = f"fsync-family syscalls per new run (strace, K={c['ours']['k']} minus 1" + (f", median of {rounds} rounds)" if rounds > 1 else ")")
        ratio = f"{fr / fo:.1f}×" if fo > 0 else "n/a"
        out.append(f"| {label} | {fmt_count(fo)} | {fmt_count(fr)} | {ratio} |")
    fl = result["floor"]["echo_round_trip_s"]
    out.append("")
    out.append(f"Times are medians (p90 in brackets) of {n} interleaved repetitions, measured by the driver from "
               f"writing the request line to reading the whole response line. Floor: the same round trip through "
               f"`cat` takes {fmt_ms(median(fl))} (p90 {fmt_ms(p90(fl))}).")
    out.append("")
    out.append(f"- command: `{result['command']}`")
    out.append(f"- date: {result['date_utc']} (UTC); `uname -r`: {result['uname_r']}; {result['nproc']} CPUs; "
               f"load average at start {result['loadavg_start'][0]:.2f}, at end {result['loadavg_end'][0]:.2f}")
    out.append(f"- ours: {result['versions']['ours']}; reference: {result['versions']['reference']}")
    return "\n".join(out)


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ours", default=os.path.join(repo, "target", "release", "openadapt-agent"),
                    help="our binary (default: target/release/openadapt-agent)")
    ap.add_argument("--reference", default=os.path.join(repo, "target", "ref-venv", "bin", "openadapt-agent"),
                    help="the reference's openadapt-agent console script (default: target/ref-venv/bin/openadapt-agent)")
    ap.add_argument("-n", "--n", type=int, default=30, help="repetitions per timed metric and runs per RSS session (default 30)")
    ap.add_argument("-k", "--k", type=int, default=20, help="new runs in the strace session (default 20; 0 skips)")
    ap.add_argument("--strace-rounds", type=int, default=3, help="strace K-vs-0 rounds per server (default 3)")
    ap.add_argument("--json", help="write the raw numbers here")
    ap.add_argument("--tmp-dir", default=None, help="where the fresh runs dirs go (default: the system temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the runs dirs and strace outputs")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args()
    if args.n < 1:
        ap.error("--n must be at least 1")
    for exe in (args.ours, args.reference):
        if not os.access(exe, os.X_OK):
            ap.error(f"not an executable: {exe}")
    if args.k == 1:
        ap.error("--k must be 0 (skip) or at least 2")
    if args.k > 0 and args.strace_rounds > 0 and shutil.which("strace") is None:
        ap.error("strace is not installed (apt-get install strace), or pass --k 0")
    result = Bench(args).run()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        sys.exit(1)
