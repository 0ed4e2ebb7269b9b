"""Production mode end to end with the real openadapt-flow 2.4.0: our server, started as an MCP
stdio server by the `mcp` SDK, runs `openadapt-flow run` (Playwright + Debian's chromium) against
Flow's own MockMed fault server. FACTS.md next to this file has what Flow does on this machine.

Run through tests/flow/run.sh (it sets up target/flow-venv and target/flow-env.sh first). A Flow
run takes 2-25 s; the tutorial bundle is recorded once per session (20-60 s).

    uncertified hand-made bundle, no profile  -> did_not_run / not_ready_to_run + failed_checks
    tutorial bundle, demo, fault=ok           -> not_sure_if_saved / not_checked, record stored
    tutorial bundle, demo, fault=timeout      -> not_sure_if_saved / save_not_confirmed
    tutorial bundle, demo, serve --timeout 2  -> not_sure_if_saved / timed_out, nothing left running
    tutorial bundle, demo, app port closed    -> not_sure_if_saved / result_unreadable

What stays fixed for every server here: HOME is a scratch folder of its own, the environment is
exactly what Flow needs (PATH and target/flow-env.sh), the Flow CLI is the venv's
`python -m openadapt_flow`, the approval mode is not_gated, and each server has its own runs
directory. Runs use `wait_seconds` long enough that run_workflow answers the final result. Each
test sends a PHI canary in the note and checks that it never appears in any MCP answer or in the
server's stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
FLOW_VENV = Path(os.environ.get("FLOW_VENV", TARGET / "flow-venv"))
FLOW_PYTHON = FLOW_VENV / "bin" / "python"
BROWSERS = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH", TARGET / "flow-browsers"))
UNCERTIFIED = HERE / "fixtures" / "uncertified-bundle"

CONTRACT_VERSION = "openadapt.run-result/v1"
RUN_ID = re.compile(r"^run-[0-9a-f]{24}$")
WORKFLOW_ID = re.compile(r"^workflow_[0-9a-f]{24}$")
# What MockMed stores for the tutorial's save with `idempotency=demo` (FACTS.md §2, §3).
TUTORIAL_RECORD = {"patient_id": "p1", "type": "Triage", "key": "mockmed-triage-p1-v1"}
# Long enough for any run here to end inside the run_workflow call (runs take 5-25 s).
WAIT_SECONDS = 240

# reason -> (outcome, safe_to_retry, record_changed, next_step): the contract's fixed rows for
# the reasons these tests can see.
REASONS: dict[str, tuple[str, bool, str, str]] = {
    "not_ready_to_run": ("did_not_run", True, "no", "fix_setup"),
    "not_checked": ("not_sure_if_saved", False, "unknown", "check_record"),
    "save_not_confirmed": ("not_sure_if_saved", False, "unknown", "check_record"),
    "timed_out": ("not_sure_if_saved", False, "unknown", "check_record"),
    "result_unreadable": ("not_sure_if_saved", False, "unknown", "check_record"),
}
# Every not_sure_if_saved reason of the contract.
NOT_SURE_REASONS = {
    "save_not_confirmed",
    "not_checked",
    "checked_below_minimum",
    "change_reversed",
    "timed_out",
    "result_unreadable",
    "interrupted",
}


def canary() -> str:
    return "PHICANARY" + uuid.uuid4().hex.upper()


def canary_hits(text: str, marks: list[str]) -> list[str]:
    return [form for mark in marks for form in (mark, mark.lower(), mark.encode().hex()) if form in text]


def workflow_id(bundle: Path) -> str:
    """Our opaque id of a bundle with a sealed manifest: contract.md's rule, computed here on
    its own so that list_workflows is checked against it."""
    digest = json.loads((bundle / "manifest.json").read_text())["content_digest"]
    return "workflow_" + hashlib.sha256(b"openadapt-agent-workflow-id-v1\0" + digest.encode()).hexdigest()[:24]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def flow_env(home: Path) -> dict[str, str]:
    """Exactly the environment a server (and so its Flow child) gets."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "PLAYWRIGHT_BROWSERS_PATH": str(BROWSERS),
        "OPENADAPT_FLOW_NO_AUTO_INSTALL": "1",
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------------------------------------
# MockMed


@dataclass
class MockMed:
    base: str  # http://127.0.0.1:PORT

    def url(self, fault: str) -> str:
        """The app entry a run opens: the SPA talks to the fault API only with `?fault=`."""
        return f"{self.base}/?fault={fault}&idempotency=demo#tasks"

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def reset(self) -> None:
        self._call("POST", "/api/reset", {})
        assert self.records() == []

    def records(self) -> list[dict[str, Any]]:
        return self._call("GET", "/api/db")["records"]


@pytest.fixture(scope="module")
def mockmed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockMed]:
    """Flow's MockMed fault server on a free port (PORT 0: it binds one and prints its URL)."""
    home = tmp_path_factory.mktemp("mockmed-home")
    proc = subprocess.Popen(
        ["bash", str(HERE / "mockmed-server.sh"), "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**flow_env(home), "FLOW_PYTHON": str(FLOW_PYTHON)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(r"^mockmed ready (http://127\.0\.0\.1:\d+)/?\s*$", line)
        assert m, f"MockMed did not start: {line!r}"
        server = MockMed(m.group(1))
        server.reset()
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(autouse=True)
def clean_store(request: pytest.FixtureRequest) -> None:
    """An empty MockMed store before each test that uses MockMed: the tutorial's record check
    wants exactly one matching row, and the store de-duplicates on the key (keeping the old
    note)."""
    if "mockmed" in request.fixturenames:
        request.getfixturevalue("mockmed").reset()


# ---------------------------------------------------------------------------------------------
# Bundles


@pytest.fixture(scope="module")
def tutorial_bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundles dir holding one bundle recorded by `openadapt-flow tutorial`, made once.

    --bind-params: Flow mines the save's `field_equals` record check with the DEMONSTRATED note as
    a literal, so without it a run with any other note halts RECONCILIATION_REQUIRED (FACTS.md
    §2, §4.1). Bound, the check reads the `note` parameter, so any note can be confirmed.
    """
    bundles = tmp_path_factory.mktemp("tutorial-bundles")
    bundle = bundles / "quickstart"
    premade = os.environ.get("FLOW_TEST_TUTORIAL_BUNDLE")
    if premade:
        # A bundle made earlier with `make-tutorial-bundle.sh --bind-params` (saves the 20-60 s of recording).
        shutil.copytree(premade, bundle)
        return bundles
    started = time.monotonic()
    made = subprocess.run(
        ["bash", str(HERE / "make-tutorial-bundle.sh"), "--bind-params", str(bundle)],
        env={
            **os.environ,
            "OPENADAPT_FLOW": str(FLOW_VENV / "bin" / "openadapt-flow"),
            "PLAYWRIGHT_BROWSERS_PATH": str(BROWSERS),
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert made.returncode == 0, f"make-tutorial-bundle.sh failed:\n{made.stderr[-4000:]}"
    assert (bundle / "workflow.json").is_file() and (bundle / "manifest.json").is_file()
    print(f"tutorial bundle recorded in {time.monotonic() - started:.1f} s")
    return bundles


@pytest.fixture(scope="module")
def uncertified_bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundles = tmp_path_factory.mktemp("uncertified-bundles")
    shutil.copytree(UNCERTIFIED, bundles / "uncertified")
    return bundles


def the_bundle(bundles: Path) -> Path:
    (bundle,) = [p for p in bundles.iterdir() if (p / "workflow.json").is_file()]
    return bundle


# ---------------------------------------------------------------------------------------------
# Our server


@dataclass
class Session:
    """A connected client. Every answer is recorded (for the PHI scans) and checked: one text
    block that is the JSON of its structuredContent, never a tool error here."""

    client: Client
    transcript: list[str] = field(default_factory=list)

    async def result(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = await self.client.call_tool(name, arguments)
        self.transcript.append(json.dumps(answer.model_dump(mode="json", by_alias=True)))
        assert len(answer.content) == 1 and answer.content[0].type == "text", answer.content
        assert not answer.is_error, f"{name} answered a tool error: {answer.content[0].text}"
        structured = answer.structured_content
        assert isinstance(structured, dict), structured
        assert json.loads(answer.content[0].text) == structured
        return structured


@dataclass
class Server:
    """One production server: a bundles dir, a target URL and its own scratch tree."""

    bin: Path
    root: Path
    bundles: Path
    url: str
    timeout: int = 600
    extra_run_args: list[str] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def stderr_path(self) -> Path:
        return self.root / "server-stderr.log"

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def params(self) -> StdioServerParameters:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.root / "cwd").mkdir(parents=True, exist_ok=True)
        args = [
            "serve",
            "--mode", "production",
            "--bundles", str(self.bundles),
            "--runs-dir", str(self.runs_dir),
            "--flow-cli", f"{FLOW_PYTHON} -m openadapt_flow",
            "--url", self.url,
            "--approval-mode", "not_gated",
            "--timeout", str(self.timeout),
        ]  # fmt: skip
        args += [f"--extra-run-arg={a}" for a in self.extra_run_args]
        # The SDK forwards only a few variables of its own environment: pass exactly ours.
        return StdioServerParameters(command=str(self.bin), args=args, env=flow_env(self.home), cwd=str(self.root / "cwd"))

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Session]:
        with open(self.stderr_path, "a") as errlog:
            transport = stdio_client(self.params(), errlog=errlog)
            async with Client(transport, mode="legacy", read_timeout_seconds=WAIT_SECONDS + 60) as client:
                yield Session(client)


def demo_args(mockmed: MockMed) -> list[str]:
    """What a demo run of the tutorial bundle needs beyond our fixed flags: the demo profile
    (otherwise Flow refuses the unencrypted bundle), and a REST effect verifier on MockMed's
    store (otherwise the save has no verifier and Flow refuses with `Approval fallback`)."""
    return ["--profile", "demo", "--effects-kind", "rest", "--effects-base-url", mockmed.base]


def check_result(r: dict[str, Any], workflow: str, request_id: str) -> None:
    """What holds for every run_workflow / get_run result here."""
    assert r["contract_version"] == CONTRACT_VERSION
    assert r["mode"] == "production"
    assert r["workflow"] == workflow
    assert r["request_id"] == request_id
    assert RUN_ID.match(r["run_id"] or ""), r["run_id"]
    assert r["reason"] in REASONS, r
    outcome, retry, changed, next_step = REASONS[r["reason"]]
    assert (r["outcome"], r["safe_to_retry"], r["record_changed"], r["next_step"]) == (outcome, retry, changed, next_step)
    assert r["proof"] == "none"  # nothing here is done
    assert ("failed_checks" in r) == (r["reason"] == "not_ready_to_run")
    assert "invalid_inputs" not in r and "replayed" not in r
    for text in ("label", "what_happened", "next_action"):
        assert isinstance(r[text], str) and r[text].strip(), text


async def run_once(server: Server, inputs: dict[str, Any], marks: list[str]) -> tuple[dict[str, Any], Session]:
    """On one connection: list_workflows, run_workflow until the run ends, get_run, and the same
    request_id again (a replay, or a new attempt when the result is safe_to_retry). Returns the
    run's result after checking that the answers agree and that no input value left through
    MCP or the server's stderr."""
    bundle = the_bundle(server.bundles)
    wid = workflow_id(bundle)
    async with server.connect() as s:
        listing = await s.result("list_workflows", {})
        assert listing["mode"] == "production" and listing["run_tools_enabled"] is True
        (card,) = listing["workflows"]
        # No openadapt-card.json: the card is named by the opaque id.
        assert WORKFLOW_ID.match(wid) and card["name"] == wid and card["id"] == wid
        assert card["available"] is True
        # Every declared param is a required input.
        assert sorted(card["inputs"]["required"]) == sorted(inputs)
        assert card["inputs"]["additionalProperties"] is False
        assert [p["name"] for p in card["parameters"]] == sorted(inputs)
        assert all(p["required"] for p in card["parameters"])

        request_id = f"flow-{uuid.uuid4().hex[:12]}"
        started = time.monotonic()
        r = await s.result(
            "run_workflow", {"workflow": wid, "inputs": inputs, "request_id": request_id, "wait_seconds": WAIT_SECONDS}
        )
        r["_call_seconds"] = round(time.monotonic() - started, 1)
        check_result(r, wid, request_id)

        # The finished run reads back the same.
        again = await s.result("get_run", {"run_id": r["run_id"], "wait_seconds": 0})
        check_result(again, wid, request_id)
        assert again == {k: v for k, v in r.items() if k != "_call_seconds"}
        same = {"workflow": wid, "inputs": inputs, "request_id": request_id, "wait_seconds": WAIT_SECONDS}
        if r["safe_to_retry"]:
            # Nothing was written: the same request_id is a new attempt, and it meets the same
            # refusal.
            retry = await s.result("run_workflow", same)
            check_result(retry, wid, request_id)
            assert retry["run_id"] != r["run_id"]
            assert (retry["reason"], retry.get("failed_checks")) == (r["reason"], r.get("failed_checks"))
        else:
            # Maybe written: the same request_id answers the recorded result, starting nothing.
            replay_started = time.monotonic()
            replay = await s.result("run_workflow", same)
            assert time.monotonic() - replay_started < 5, "a replay starts no Flow run"
            assert replay.pop("replayed") is True
            assert replay == again
        print(f"run_workflow answered in {r['_call_seconds']} s: {json.dumps(again, sort_keys=True)}")

    # The PHI boundary: no input value, and no canary in any form, in anything MCP answered or
    # the server logged.
    everything = "\n".join(s.transcript)
    texts = [v for v in inputs.values() if isinstance(v, str) and len(v) > 8]
    assert canary_hits(everything, marks) == [], "a canary in MCP output"
    assert [t for t in texts if t in everything] == [], "an input value in MCP output"
    assert canary_hits(server.stderr(), marks) == [], "a canary in the server's stderr"
    return r, s


def assert_one_tutorial_record(mockmed: MockMed, note: str) -> None:
    records = mockmed.records()
    assert len(records) == 1, f"{len(records)} records"
    (record,) = records
    assert {k: record.get(k) for k in TUTORIAL_RECORD} == TUTORIAL_RECORD
    assert record["note"] == note


def flow_output(server: Server, run_id: str) -> str:
    """Flow's stdout and stderr of one run, as the server keeps them locally (never for MCP):
    here only to prove what Flow did."""
    return (server.runs_dir / "openadapt-agent" / "flow" / "diagnostics" / f"{run_id}.log").read_text(errors="replace")


def run_dir_files(server: Server, run_id: str) -> list[str]:
    d = server.runs_dir / run_id
    return sorted(str(p.relative_to(d)) for p in d.rglob("*")) if d.is_dir() else []


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.fixture(scope="module")
def server_bin() -> Path:
    path = Path(os.environ.get("OPENADAPT_AGENT_BIN") or REPO / "target" / "debug" / "openadapt-agent").resolve()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"no server binary at {path}: run `cargo build -p openadapt-agent`", pytrace=False)
    for need in (FLOW_PYTHON, BROWSERS):
        if not need.exists():
            pytest.fail(f"{need} is missing: run tests/flow/setup.sh", pytrace=False)
    return path


async def test_uncertified_bundle_is_not_ready_to_run(
    server_bin: Path, uncertified_bundles: Path, mockmed: MockMed, tmp_path: Path
) -> None:
    """The hand-made bundle was never certified. Without a profile Flow applies its full gates
    and refuses before executing anything (exit 2, no report), printing
        [REFUSE] Certification: bundle is NOT certified under 'clinical-write': ...
        [REFUSE] Encrypted bundle: bundle workflow.json is NOT encrypted at rest ...
    Our server maps each refused gate title, in printed order, to its check code. (The reference
    agent matches the older title `Certification passed` and so reports only not_encrypted.)
    Under `--profile demo` the same bundle is admitted and halts in the browser instead; under
    standard Flow refuses earlier, for the missing qualification admission."""
    server = Server(server_bin, tmp_path, uncertified_bundles, mockmed.url("ok"))
    note = f"Synthetic note {(marks := [canary()])[0]}"
    inputs = {
        "note": note,
        "visit_date": "2026-01-02",
        "visit_kind": "Triage",
        "dose_mg": 5,
        "urgent": False,
        "patient_ref": "p1",
    }
    r, _ = await run_once(server, inputs, marks)
    assert (r["outcome"], r["reason"]) == ("did_not_run", "not_ready_to_run")
    assert r["failed_checks"] == ["not_certified", "not_encrypted"]
    out = flow_output(server, r["run_id"])
    assert "[REFUSE] Certification:" in out and "[REFUSE] Encrypted bundle:" in out
    assert "RUN REFUSED" in out
    assert "technical" not in r and "checked_how" not in r
    assert r["_call_seconds"] < 60
    # Nothing ran: no report, nothing stored.
    assert "report.json" not in run_dir_files(server, r["run_id"])
    assert mockmed.records() == []


async def test_tutorial_bundle_fault_ok_saves_but_is_not_checked(
    server_bin: Path, tutorial_bundles: Path, mockmed: MockMed, tmp_path: Path
) -> None:
    """A real recorded bundle, demo profile, not_gated, MockMed answering normally: the record
    lands in MockMed's store with our note. The demo profile tops out at COMPLETED_UNVERIFIED
    ("screen evidence cannot produce a production VERIFIED outcome"), even though the REST
    verifier read the record back, so the honest answer is not_sure_if_saved / not_checked."""
    server = Server(server_bin, tmp_path, tutorial_bundles, mockmed.url("ok"), extra_run_args=demo_args(mockmed))
    note = f"Synthetic triage note {(marks := [canary()])[0]} for the real Flow test"
    r, _ = await run_once(server, {"note": note}, marks)
    assert (r["outcome"], r["reason"]) == ("not_sure_if_saved", "not_checked")
    assert r["technical"] == {
        "execution_outcome": "COMPLETED_UNVERIFIED",
        "transaction_outcome": "COMPLETED_UNVERIFIED",
        "approval_mode": "not_gated",
    }
    # The report's readback: the verifier did read the record back from the system of record;
    # the demo profile still does not let that count as a production check.
    assert r["checked_how"] == "system_of_record"
    assert_one_tutorial_record(mockmed, note)
    assert "report.json" in run_dir_files(server, r["run_id"])


async def test_tutorial_bundle_fault_timeout_is_not_sure_if_saved(
    server_bin: Path, tutorial_bundles: Path, mockmed: MockMed, tmp_path: Path
) -> None:
    """`fault=timeout`: MockMed stores the record, then sleeps 3 s before answering the save.
    Meanwhile the app shows no outcome, so the save click's postcondition (the region where the
    result appears settling) is not reached in time: Flow halts at the save step after the
    click, with transaction outcome RECONCILIATION_REQUIRED (exit 1, with a report). The click
    may have written, and here it did, so our answer is not_sure_if_saved / save_not_confirmed:
    a person checks the record; never retried."""
    server = Server(server_bin, tmp_path, tutorial_bundles, mockmed.url("timeout"), extra_run_args=demo_args(mockmed))
    note = f"Synthetic triage note {(marks := [canary()])[0]} slow save"
    r, _ = await run_once(server, {"note": note}, marks)
    assert r["outcome"] == "not_sure_if_saved" and r["reason"] in NOT_SURE_REASONS
    assert r["reason"] == "save_not_confirmed"
    assert r["technical"] == {
        "execution_outcome": "HALTED",
        "transaction_outcome": "RECONCILIATION_REQUIRED",
        "approval_mode": "not_gated",
    }
    # The run halted before its record check, so the report's readback is `unchecked`.
    assert (r["checked_how"], r["checked_how_label"]) == ("unchecked", "Not checked")
    assert_one_tutorial_record(mockmed, note)


def leftover_processes(home: Path, agent_bin: Path) -> list[str]:
    """Processes (other than our server) that still carry the server's HOME: Flow, Playwright's
    driver or chromium left behind."""
    want = f"HOME={home}".encode()
    agent = os.stat(agent_bin)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if want not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            exe = os.stat(proc / "exe")
            if (exe.st_dev, exe.st_ino) == (agent.st_dev, agent.st_ino):
                continue
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:200]
            found.append(f"{proc.name}: {cmdline!r}")
        except OSError:
            continue
    return found


async def test_short_server_timeout_is_timed_out(
    server_bin: Path, tutorial_bundles: Path, mockmed: MockMed, tmp_path: Path
) -> None:
    """`serve --timeout 2`: Flow is still starting its browser when the server stops it (the
    whole process group), so the answer is not_sure_if_saved / timed_out: the server cannot know
    how far the run got."""
    server = Server(
        server_bin, tmp_path, tutorial_bundles, mockmed.url("ok"), timeout=2, extra_run_args=demo_args(mockmed)
    )
    note = f"Synthetic triage note {(marks := [canary()])[0]} cut short"
    r, _ = await run_once(server, {"note": note}, marks)
    assert (r["outcome"], r["reason"]) == ("not_sure_if_saved", "timed_out")
    assert "technical" not in r and "checked_how" not in r
    assert 2 <= r["_call_seconds"] < 20
    # The stopped run left nothing running.
    deadline = time.monotonic() + 10
    while (left := leftover_processes(server.home, server_bin)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == [], left


async def test_app_port_closed_is_result_unreadable(
    server_bin: Path, tutorial_bundles: Path, mockmed: MockMed, tmp_path: Path
) -> None:
    """The app's port has nothing listening: Flow's gates admit the run, the browser's first
    navigation fails with net::ERR_CONNECTION_REFUSED, and Flow exits 1 with a traceback and no
    report.json. Exit 1 without a report proves nothing either way, so the honest answer is
    not_sure_if_saved / result_unreadable (never app_unreachable: the server cannot tell from
    Flow's output that nothing was written)."""
    port = free_port()
    server = Server(
        server_bin,
        tmp_path,
        tutorial_bundles,
        f"http://127.0.0.1:{port}/?fault=ok&idempotency=demo#tasks",
        extra_run_args=demo_args(mockmed),
    )
    note = f"Synthetic triage note {(marks := [canary()])[0]} nowhere to go"
    r, _ = await run_once(server, {"note": note}, marks)
    assert (r["outcome"], r["reason"]) == ("not_sure_if_saved", "result_unreadable")
    assert "technical" not in r and "checked_how" not in r and "failed_checks" not in r
    assert "report.json" not in run_dir_files(server, r["run_id"])
    out = flow_output(server, r["run_id"])
    assert "ADMIT:" in out and f"net::ERR_CONNECTION_REFUSED at http://127.0.0.1:{port}/" in out
    assert mockmed.records() == []
