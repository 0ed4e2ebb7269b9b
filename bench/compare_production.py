#!/usr/bin/env python3
"""Production mode, side by side: our Rust server against the Python reference.

Two figures, each measured on both servers in the same run, interleaved:

  run       server-side overhead of a governed run: the run_workflow round trip (fresh
            request_id, wait_seconds 60) minus the median wall time of the fake Flow itself,
            measured standalone the way each server spawns it (the raw round trip is reported
            too)
  list      list_workflows round trip with 200 bundles; and, as an extra, cold start with those
            200 bundles (spawn -> initialize response)

Both servers run `serve --mode production --bundles DIR --flow-cli FAKE --approval-mode
not_gated --runs-dir R`, with HOME and XDG_CACHE_HOME in a scratch folder of their own (kept for
the whole benchmark, so our precompiled-engine cache behaves as across real starts) and
OPENADAPT_AGENT_RUNS_DIR set to R. FAKE is bench/production/fast_fake_flow.sh plus a report
template (default: the real VERIFIED report in tests/flow/fixtures/flow-run/): a dash script that
creates the run dir, copies the report there and exits 0, so every run ends `done` /
`saved_and_checked` on both servers. The bundles are made with Flow's own IR and save routine
(bench/production/make_bundles.py, run with --flow-python), so the reference's Workflow.load
accepts every one of them and each has its own digest.

Phases:
  fake      the fake Flow alone, spawned as the reference does (Popen, stdout/stderr pipes,
            communicate) and as ours does (stdin /dev/null, stdout/stderr appended to a file,
            own process group); interleaved with the session phase below
  warm-up   one session per server (initialize, list_workflows, one run), discarded
  cold      N times per server: spawn -> initialize response, then the first list_workflows of
            that process
  session   one long session per server: N times list_workflows and a new run_workflow
  fsyncs    fsync-family calls per run: strace -f -c over a session of K runs minus one of 1
            run, divided by K - 1, so a fresh runs dir's one-time costs (its fingerprint key,
            made on the first run) are not charged to every run (--fsync-k; 0 skips)

Stdlib only. Linux only.
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
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

RUN_INPUTS = {
    "note": "Patient reports mild headache since this morning.",
    "visit_date": "2026-10-08",
    "visit_kind": "Consult",
    "dose_mg": 5,
    "urgent": False,
    "patient_ref": "p1",
}


class BenchError(RuntimeError):
    pass


def line(obj: dict) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def fresh_request_id() -> str:
    return "bench-" + uuid.uuid4().hex


class Server:
    """One server process speaking line-delimited JSON-RPC on its stdio."""

    def __init__(self, name: str, argv: list[str], env: dict):
        self.name = name
        self.next_id = 1
        self.last_bytes = 0  # size of the last response line
        self.stderr = tempfile.TemporaryFile()
        self.t_spawn = time.perf_counter_ns()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env)

    def _send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _recv(self, msg_id: int) -> dict:
        """The response to msg_id; self.t_line is when its whole line had been read (before parsing)."""
        while True:
            raw = self.proc.stdout.readline()
            self.t_line = time.perf_counter_ns()
            if not raw:
                self.stderr.seek(0)
                err = self.stderr.read().decode(errors="replace")[-3000:]
                raise BenchError(f"{self.name}: server closed stdout (exit {self.proc.poll()}); stderr:\n{err}")
            msg = json.loads(raw)
            if msg.get("id") == msg_id and ("result" in msg or "error" in msg):
                self.last_bytes = len(raw)
                return msg

    def request(self, method: str, params: dict) -> tuple[float, dict]:
        msg_id = self.next_id
        self.next_id += 1
        data = line({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        t0 = time.perf_counter_ns()
        self._send(data)
        msg = self._recv(msg_id)
        dt = (self.t_line - t0) / 1e9
        if "error" in msg:
            raise BenchError(f"{self.name}: {method} answered a JSON-RPC error: {msg['error']}")
        return dt, msg

    def initialize(self) -> float:
        """Spawn -> initialize response, in seconds."""
        msg_id = self.next_id
        self.next_id += 1
        self._send(line({"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "openadapt-bench", "version": "1"}}}))
        msg = self._recv(msg_id)
        dt = (self.t_line - self.t_spawn) / 1e9
        if "error" in msg:
            raise BenchError(f"{self.name}: initialize failed: {msg['error']}")
        self._send(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return dt

    def call(self, name: str, arguments: dict) -> tuple[float, dict]:
        dt, msg = self.request("tools/call", {"name": name, "arguments": arguments})
        res = msg["result"]
        if res.get("isError"):
            raise BenchError(f"{self.name}: {name} answered isError: {json.dumps(res)[:800]}")
        return dt, res.get("structuredContent") or {}

    def list_workflows(self, expect: int) -> tuple[float, list]:
        dt, sc = self.call("list_workflows", {})
        wfs = sc.get("workflows") or []
        available = sum(1 for w in wfs if w.get("available"))
        if len(wfs) != expect or available != expect:
            raise BenchError(f"{self.name}: list_workflows listed {len(wfs)} workflows, {available} available; expected {expect}")
        return dt, wfs

    def run(self, workflow: str) -> float:
        args = {"workflow": workflow, "request_id": fresh_request_id(), "inputs": RUN_INPUTS, "wait_seconds": 60}
        dt, sc = self.call("run_workflow", args)
        if (sc.get("outcome"), sc.get("reason")) != ("done", "saved_and_checked") or sc.get("replayed"):
            raise BenchError(f"{self.name}: run_workflow answered {json.dumps(sc)[:800]}; expected a fresh done/saved_and_checked")
        return dt

    def vm_hwm_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for row in f:
                if row.startswith("VmHWM:"):
                    return int(row.split()[1])
        return 0

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


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.tmp_root = tempfile.mkdtemp(prefix="openadapt-bench-prod-", dir=args.tmp_dir)
        self.order = ["ours", "reference"]
        self.exe = {"ours": args.ours, "reference": args.reference}
        self.flow_cli = f"{args.fake} {args.report}"
        self.homes = {}
        for who in self.order:
            home = os.path.join(self.tmp_root, f"home-{who}")
            os.makedirs(home, mode=0o700)
            self.homes[who] = home
        self.n_dirs = 0
        self.bundles_dir = args.bundles
        self.run_workflow = None  # the run bundle's workflow name (same on both servers)

    def log(self, msg: str) -> None:
        if not self.args.quiet:
            print(msg, file=sys.stderr, flush=True)

    def fresh_dir(self, what: str) -> str:
        self.n_dirs += 1
        d = os.path.join(self.tmp_root, f"{self.n_dirs:04d}-{what}")
        os.makedirs(d, mode=0o700)
        return d

    def argv(self, who: str, runs: str) -> list[str]:
        return [self.exe[who], "serve", "--mode", "production", "--bundles", self.bundles_dir,
                "--flow-cli", self.flow_cli, "--approval-mode", "not_gated", "--runs-dir", runs]

    def env(self, who: str, runs: str) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENADAPT_", "XDG_"))}
        env["HOME"] = self.homes[who]
        env["XDG_CACHE_HOME"] = os.path.join(self.homes[who], ".cache")
        env["OPENADAPT_AGENT_RUNS_DIR"] = runs
        return env

    def spawn(self, who: str) -> Server:
        runs = self.fresh_dir(who)
        return Server(who, self.argv(who, runs), self.env(who, runs))

    # -- bundles ---------------------------------------------------------------------------

    def make_bundles(self) -> dict:
        if self.bundles_dir:
            n = sum(1 for e in os.scandir(self.bundles_dir) if e.is_dir() and os.path.isfile(os.path.join(e.path, "workflow.json")))
            return {"dir": self.bundles_dir, "count": n, "made": False}
        out = os.path.join(self.tmp_root, "bundles")
        t0 = time.perf_counter()
        p = subprocess.run([self.args.flow_python, os.path.join(HERE, "production", "make_bundles.py"), out,
                            "--count", str(self.args.count)], capture_output=True, text=True)
        if p.returncode != 0:
            raise BenchError(f"make_bundles.py failed ({p.returncode}):\n{p.stderr[-3000:]}")
        info = json.loads(p.stdout.strip().splitlines()[-1])
        info.update(made=True, seconds=time.perf_counter() - t0, flow_python=self.args.flow_python)
        self.bundles_dir = out
        self.log(f"made {info['count']} bundles in {info['seconds']:.1f} s (workflow.json {info['bytes_per_workflow_json']} B each)")
        return info

    # -- the fake Flow alone -----------------------------------------------------------------

    def fake_argv(self, run_dir: str, params: str) -> list[str]:
        bundle = os.path.join(self.bundles_dir, sorted(os.listdir(self.bundles_dir))[0])
        return [*shlex.split(self.flow_cli), "run", bundle, "--run-dir", run_dir, "--params-file", params,
                "--approval-mode", "not_gated", "--started-by", "agent:unidentified"]

    def fake_once(self, how: str) -> float:
        base = self.fresh_dir(f"fake-{how}")
        params = os.path.join(base, "params.json")
        with open(params, "w") as f:
            json.dump({k: str(v) for k, v in RUN_INPUTS.items()}, f)
        os.chmod(params, 0o600)
        argv = self.fake_argv(os.path.join(base, "run"), params)
        if how == "pipes":  # as the reference: subprocess.Popen(stdout=PIPE, stderr=PIPE), communicate()
            t0 = time.perf_counter_ns()
            with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
                p.communicate()
            dt = (time.perf_counter_ns() - t0) / 1e9
        else:  # as ours: stdin /dev/null, stdout+stderr appended to a private file, own process group
            fd = os.open(os.path.join(base, "diagnostics.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                t0 = time.perf_counter_ns()
                p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, process_group=0)
                p.wait()
                dt = (time.perf_counter_ns() - t0) / 1e9
            finally:
                os.close(fd)
        if p.returncode != 0 or not os.path.isfile(os.path.join(base, "run", "report.json")):
            raise BenchError(f"the fake Flow failed standalone ({how}, exit {p.returncode})")
        return dt

    # -- phases ----------------------------------------------------------------------------

    def warm_up(self) -> dict:
        out = {}
        names = {}
        for who in self.order:
            s = self.spawn(who)
            cold = s.initialize()
            tl, msg = s.request("tools/list", {})
            sizes = {"tools_list": s.last_bytes, "tools": len(msg["result"]["tools"])}
            lst, wfs = s.list_workflows(self.args.count)
            sizes["list_workflows"] = s.last_bytes
            names[who] = [w["name"] for w in wfs]
            run = s.run(names[who][0])
            sizes["run_workflow"] = s.last_bytes
            s.close()
            out[who] = {"cold_start_s": cold, "tools_list_s": tl, "list_workflows_s": lst, "run_s": run,
                        "response_bytes": sizes}
            self.log(f"warm-up {who}: cold start {cold * 1e3:.0f} ms, list_workflows {lst * 1e3:.1f} ms, run {run * 1e3:.1f} ms")
        same = names["ours"] == names["reference"]
        out["workflow_names_identical"] = same
        if not same:
            diff = sum(1 for a, b in zip(names["ours"], names["reference"]) if a != b)
            self.log(f"NOTE: the two servers name the workflows differently ({diff} of {len(names['ours'])} differ)")
        self.run_workflow = {who: names[who][0] for who in self.order}
        out["run_workflow"] = self.run_workflow
        return out

    def cold(self) -> dict:
        res = {who: {"cold_start_s": [], "first_list_workflows_s": []} for who in self.order}
        for i in range(self.args.n):
            order = self.order if i % 2 == 0 else self.order[::-1]
            for who in order:
                s = self.spawn(who)
                res[who]["cold_start_s"].append(s.initialize())
                res[who]["first_list_workflows_s"].append(s.list_workflows(self.args.count)[0])
                s.close()
            self.log(f"cold {i + 1}/{self.args.n}: ours {res['ours']['cold_start_s'][-1] * 1e3:.0f} ms, "
                     f"reference {res['reference']['cold_start_s'][-1] * 1e3:.0f} ms")
        return res

    def session(self) -> dict:
        res = {who: {"list_workflows_s": [], "run_s": []} for who in self.order}
        fake = {"pipes": [], "file": []}
        sessions = {}
        for who in self.order:
            s = self.spawn(who)
            s.initialize()
            s.list_workflows(self.args.count)
            sessions[who] = s
        for i in range(self.args.n):
            order = self.order if i % 2 == 0 else self.order[::-1]
            for how in ("pipes", "file") if i % 2 == 0 else ("file", "pipes"):
                for _ in range(self.args.fake_per_rep):
                    fake[how].append(self.fake_once(how))
            for who in order:
                res[who]["list_workflows_s"].append(sessions[who].list_workflows(self.args.count)[0])
            for who in order:
                res[who]["run_s"].append(sessions[who].run(self.run_workflow[who]))
            self.log(f"session {i + 1}/{self.args.n}: run ours {res['ours']['run_s'][-1] * 1e3:.1f} ms, "
                     f"reference {res['reference']['run_s'][-1] * 1e3:.1f} ms; fake alone "
                     f"{fake['file'][-1] * 1e3:.1f} / {fake['pipes'][-1] * 1e3:.1f} ms")
        for who in self.order:
            res[who]["vm_hwm_kib"] = sessions[who].vm_hwm_kib()
            sessions[who].close()
        # Each server's spawn style: ours appends to a file, the reference reads pipes.
        res["fake_standalone_s"] = fake
        res["fake_subtracted"] = {"ours": "file", "reference": "pipes"}
        for who in self.order:
            sub = median(fake[res["fake_subtracted"][who]])
            res[who]["overhead_s"] = [x - sub for x in res[who]["run_s"]]
        return res

    def fsyncs(self) -> dict:
        """fsync-family calls per run: strace -f -c over a session of K runs minus one of 1 run."""
        k = self.args.fsync_k
        out = {}
        for who in self.order:
            counts = {}
            for runs in (k, 1):
                trace = os.path.join(self.tmp_root, f"strace-{who}-{runs}.txt")
                dirs = self.fresh_dir(who)
                s = Server(who, ["strace", "-f", "-c", "-o", trace, "-e", "trace=" + ",".join(FSYNC_FAMILY),
                                 *self.argv(who, dirs)], self.env(who, dirs))
                s.initialize()
                s.list_workflows(self.args.count)
                for _ in range(runs):
                    s.run(self.run_workflow[who])
                s.close(timeout=60)
                with open(trace) as f:
                    counts[runs] = parse_strace_c(f.read())
            per_run = {c: (counts[k].get(c, 0) - counts[1].get(c, 0)) / (k - 1) for c in sorted(set(counts[k]) | set(counts[1]))}
            out[who] = {"k": k, "k_runs": counts[k], "one_run": counts[1], "per_run": per_run,
                        "per_run_total": sum(per_run.values())}
            self.log(f"fsync-family calls per run, {who}: {out[who]['per_run_total']:.1f} {per_run}")
        return out

    def floor(self) -> dict:
        """Round trip of a run_workflow-sized line through `cat`: the pipe plus this driver."""
        proc = subprocess.Popen([shutil.which("cat")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        samples = []
        for i in range(max(self.args.n, 30)):
            data = line({"jsonrpc": "2.0", "id": i, "result": {"inputs": RUN_INPUTS, "request_id": fresh_request_id()}})
            t0 = time.perf_counter_ns()
            proc.stdin.write(data)
            proc.stdin.flush()
            proc.stdout.readline()
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
            "versions": versions(self.args),
            "n": self.args.n,
            "flow_cli": self.flow_cli,
        }
        try:
            result["bundles"] = self.make_bundles()
            if result["bundles"]["count"] != self.args.count:
                raise BenchError(f"{self.bundles_dir} holds {result['bundles']['count']} bundles; --count says {self.args.count}")
            result["servers"] = {who: self.argv(who, "RUNS_DIR") for who in self.order}
            result["floor"] = self.floor()
            result["warm_up"] = self.warm_up()
            result["cold"] = self.cold()
            result["session"] = self.session()
            if self.args.fsync_k > 0:
                result["fsyncs"] = self.fsyncs()
            result["loadavg_end"] = os.getloadavg()
            result["seconds_total"] = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
        finally:
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
FSYNC_FAMILY = ["fsync", "fdatasync", "sync_file_range", "syncfs", "sync"]


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
    if abs(ms) >= 100:
        return f"{ms:.0f} ms"
    if abs(ms) >= 10:
        return f"{ms:.1f} ms"
    if abs(ms) >= 1:
        return f"{ms:.2f} ms"
    return f"{ms:.3f} ms"


def cells(a: list, b: list) -> tuple[str, str, str]:
    ma, mb = median(a), median(b)
    return (
        f"{fmt_ms(ma)} (p90 {fmt_ms(p90(a))})",
        f"{fmt_ms(mb)} (p90 {fmt_ms(p90(b))})",
        f"{mb / ma:.1f}×" if ma > 0 else "n/a",
    )


def table(result: dict) -> str:
    c, s = result["cold"], result["session"]
    n, count = result["n"], result["bundles"]["count"]
    fake = s["fake_standalone_s"]
    rows = [
        ("Governed run overhead: `run_workflow` round trip minus the fake Flow's own time", s, "overhead_s"),
        ("`run_workflow` round trip, raw (fresh request_id, fake Flow, `done`)", s, "run_s"),
        (f"`list_workflows` round trip, {count} bundles", s, "list_workflows_s"),
        (f"Cold start with {count} bundles: spawn → initialize response", c, "cold_start_s"),
        (f"First `list_workflows` of a fresh process, {count} bundles", c, "first_list_workflows_s"),
    ]
    out = ["| metric | ours | reference | ratio (reference/ours) |", "|---|---|---|---|"]
    for label, src, key in rows:
        a, b, r = cells(src["ours"][key], src["reference"][key])
        out.append(f"| {label} | {a} | {b} | {r} |")
    if "fsyncs" in result:
        f = result["fsyncs"]
        fo, fr = f["ours"]["per_run_total"], f["reference"]["per_run_total"]
        out.append(f"| fsync-family syscalls per run (strace -f -c, {f['ours']['k']} runs minus 1) | {fo:.1f} | {fr:.1f} | "
                   + (f"{fr / fo:.1f}× |" if fo > 0 else "n/a |"))
    wu = result["warm_up"]
    bo, br = wu["ours"]["response_bytes"]["list_workflows"], wu["reference"]["response_bytes"]["list_workflows"]
    out.append(f"| `list_workflows` response size, {count} bundles | {bo / 1024:.0f} KiB | {br / 1024:.0f} KiB | {br / bo:.1f}× |")
    ho, hr = s["ours"]["vm_hwm_kib"], s["reference"]["vm_hwm_kib"]
    if ho and hr:
        out.append(f"| Peak RSS (VmHWM) after the session ({n} runs, {n + 1} listings) | {ho / 1024:.1f} MiB | "
                   f"{hr / 1024:.1f} MiB | {hr / ho:.1f}× |")
    fl = result["floor"]["echo_round_trip_s"]
    out.append("")
    out.append(
        f"Medians (p90 in brackets) of {n} interleaved repetitions, timed by the driver from writing the request "
        f"line to having read the whole response line (parsing it is not counted). Every run answered `done`/`saved_and_checked`. The fake Flow "
        f"(`bench/production/fast_fake_flow.sh`: dash, `mkdir`, `cp` of a {report_size(result)} VERIFIED report) "
        f"takes {fmt_ms(median(fake['file']))} (p90 {fmt_ms(p90(fake['file']))}) spawned as ours spawns it "
        f"(stdout/stderr to a file, own process group) and {fmt_ms(median(fake['pipes']))} "
        f"(p90 {fmt_ms(p90(fake['pipes']))}) as the reference does (pipes, `communicate`), {len(fake['file'])} "
        f"times each, interleaved with the runs; each server's overhead subtracts its own. Bundles: {count} "
        f"made with Flow's `Workflow.save` (`bench/production/make_bundles.py`), all loadable on both servers; "
        f"the run uses the first. Floor: a request-sized line through `cat` takes {fmt_ms(median(fl))}."
    )
    out.append("")
    out.append(f"- command: `{result['command']}`")
    out.append(f"- date: {result['date_utc']} (UTC); `uname -r`: {result['uname_r']}; {result['nproc']} CPUs; "
               f"load average at start {result['loadavg_start'][0]:.2f}, at end {result['loadavg_end'][0]:.2f}")
    out.append(f"- ours: {result['versions']['ours']}; reference: {result['versions']['reference']}")
    return "\n".join(out)


def report_size(result: dict) -> str:
    try:
        return f"{os.path.getsize(result['flow_cli'].split()[-1]) / 1024:.0f} KB"
    except OSError:
        return "template"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ours", default=os.path.join(REPO, "target", "release", "openadapt-agent"),
                    help="our binary (default: target/release/openadapt-agent)")
    ap.add_argument("--reference", default=os.path.join(REPO, "target", "ref-venv", "bin", "openadapt-agent"),
                    help="the reference's console script (default: target/ref-venv/bin/openadapt-agent)")
    ap.add_argument("--flow-python", default=os.path.join(REPO, "target", "ref-venv", "bin", "python"),
                    help="a Python with openadapt-flow 2.4.0, to make the bundles (default: target/ref-venv/bin/python)")
    ap.add_argument("--bundles", help="use this directory of bundles instead of making them (must hold --count)")
    ap.add_argument("--count", type=int, default=200, help="bundles to make and list (default 200)")
    ap.add_argument("--fake", default=os.path.join(HERE, "production", "fast_fake_flow.sh"),
                    help="the fake Flow script (default: bench/production/fast_fake_flow.sh)")
    ap.add_argument("--report", default=os.path.join(REPO, "tests", "flow", "fixtures", "flow-run",
                                                     "verified_tutorial_inprocess", "report.json"),
                    help="the VERIFIED report.json the fake writes (default: the real one in tests/flow/fixtures)")
    ap.add_argument("-n", "--n", type=int, default=30, help="repetitions (default 30)")
    ap.add_argument("--fake-per-rep", type=int, default=2,
                    help="standalone fake Flow timings per repetition and spawn style (default 2)")
    ap.add_argument("--fsync-k", type=int, default=10,
                    help="runs in the strace session that counts fsync-family calls per run (default 10; 0 skips)")
    ap.add_argument("--json", help="write the raw numbers here")
    ap.add_argument("--tmp-dir", default=None, help="where bundles, runs dirs and scratch homes go (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args()
    if args.n < 1:
        ap.error("--n must be at least 1")
    for exe in (args.ours, args.reference, args.fake):
        if not os.access(exe, os.X_OK):
            ap.error(f"not an executable: {exe}")
    if not args.bundles and not os.access(args.flow_python, os.X_OK):
        ap.error(f"not an executable: {args.flow_python} (or pass --bundles)")
    for p in (args.fake, args.report, args.bundles or ""):
        if any(ch.isspace() for ch in p):
            ap.error(f"paths must not contain whitespace (our server splits --flow-cli on it): {p}")
    if args.fsync_k == 1:
        ap.error("--fsync-k must be 0 (skip) or at least 2")
    if args.fsync_k > 0 and shutil.which("strace") is None:
        ap.error("strace is not installed (apt-get install strace), or pass --fsync-k 0")
    if args.bundles:
        args.bundles = os.path.abspath(args.bundles)
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
        print(f"compare_production.py: {e}", file=sys.stderr)
        sys.exit(1)
