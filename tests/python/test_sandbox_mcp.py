"""The sandbox server, black-box, through the Python `mcp` SDK in both of its connection modes:
"auto" (the 2026-07-28 protocol: server/discover, no initialize) and "legacy" (the initialize
handshake). Every answer goes through `support.Session.call`, which validates it against the
tool's listed outputSchema and the reference's, checks its text against its structuredContent
and checks the result contract's fixed rows."""

from __future__ import annotations

import copy
import os
import stat
import uuid
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anyio
import pytest
from mcp import Client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from support import REFERENCE, RUN_ID, TOOL_NAMES, WORKFLOW, Server, Session

pytestmark = pytest.mark.anyio

MODES = ("auto", "legacy")


@pytest.fixture(params=MODES)
def server(request: pytest.FixtureRequest, server_bin: Path, tmp_path: Path) -> Server:
    """A server setup with a fresh tmp runs dir and HOME, for one client mode."""
    return Server(bin=server_bin, mode=request.param, root=tmp_path)


@pytest.fixture
async def session(server: Server) -> AsyncIterator[Session]:
    """A connected client of a freshly started server."""
    async with server.connect() as connected:
        yield connected


def strip_docs(schema: Any) -> Any:
    """A schema without its prose (description, title) and $schema: its structure."""
    if isinstance(schema, dict):
        return {k: strip_docs(v) for k, v in schema.items() if k not in ("description", "title", "$schema")}
    if isinstance(schema, list):
        return [strip_docs(v) for v in schema]
    return schema


def canary() -> str:
    return "PHICANARY" + uuid.uuid4().hex.upper()


# ---------------------------------------------------------------------------------------------
# The surface


async def test_each_mode_speaks_its_protocol_era(server: Server, session: Session) -> None:
    versions = MODERN_PROTOCOL_VERSIONS if server.mode == "auto" else HANDSHAKE_PROTOCOL_VERSIONS
    assert session.client.protocol_version in versions
    assert session.client.server_info is not None and session.client.server_info.name == "openadapt-agent"


async def test_client_built_from_stdio_server_parameters(server: Server) -> None:
    """The SDK's plain form, `Client(StdioServerParameters(...), mode=...)`, as a calling agent
    writes it (the other tests build the same stdio transport explicitly to read stderr)."""
    async with Client(server.params(), mode=server.mode, read_timeout_seconds=60) as client:
        assert sorted(t.name for t in (await client.list_tools()).tools) == sorted(TOOL_NAMES)
        result = await client.call_tool(
            "run_workflow", {"workflow": WORKFLOW, "inputs": {"note": "Synthetic note."}, "request_id": "plain-0001"}
        )
        assert not result.is_error
        assert (result.structured_content["outcome"], result.structured_content["reason"]) == ("done", "saved_and_checked")


async def test_tools_list_is_exactly_the_three_tools_of_the_reference(session: Session) -> None:
    listed = (await session.client.list_tools(cache_mode="bypass")).tools
    assert sorted(t.name for t in listed) == sorted(TOOL_NAMES)
    for tool in listed:
        reference = REFERENCE[tool.name]
        hints = tool.annotations
        assert hints is not None, tool.name
        assert {
            "readOnlyHint": hints.read_only_hint,
            "destructiveHint": hints.destructive_hint,
            "idempotentHint": hints.idempotent_hint,
            "openWorldHint": hints.open_world_hint,
        } == reference["annotations"], tool.name
        assert strip_docs(tool.input_schema) == reference["inputSchema"], tool.name
        assert tool.output_schema is not None, tool.name
        assert strip_docs(tool.output_schema) == reference["outputSchema"], tool.name
        assert tool.description, tool.name


async def test_tool_annotations_spelled_out(session: Session) -> None:
    hints = {name: tool.annotations for name, tool in session.tools.items()}
    for name in ("list_workflows", "get_run"):
        h = hints[name]
        assert (h.read_only_hint, h.idempotent_hint, h.destructive_hint, h.open_world_hint) == (True, True, False, False)
    h = hints["run_workflow"]
    assert (h.read_only_hint, h.destructive_hint, h.idempotent_hint, h.open_world_hint) == (False, True, True, True)


async def test_list_workflows_shows_the_sandbox_workflow(session: Session) -> None:
    listing = await session.result("list_workflows", {})
    assert listing["mode"] == "sandbox"
    assert listing["run_tools_enabled"] is True
    assert [w["name"] for w in listing["workflows"]] == [WORKFLOW]
    card = listing["workflows"][0]
    assert card["available"] is True
    assert card["changes_records"] is True
    assert strip_docs(card["inputs"]) == REFERENCE["_sandbox_workflow_inputs"]
    # Omitted arguments are the same as {}.
    assert await session.result("list_workflows") == listing


# ---------------------------------------------------------------------------------------------
# Sandbox cases

EXPECTED: dict[str, dict[str, Any]] = {
    "normal": {
        "outcome": "done",
        "reason": "saved_and_checked",
        "safe_to_retry": False,
        "record_changed": "yes",
        "proof": "simulated",
        "next_step": "none",
        "technical": {"execution_outcome": "VERIFIED", "transaction_outcome": "VERIFIED"},
    },
    "duplicate_record": {
        "outcome": "needs_review",
        "reason": "record_not_confirmed",
        "safe_to_retry": False,
        "record_changed": "no",
        "proof": "none",
        "next_step": "wait_for_person",
        "technical": {"execution_outcome": "HALTED", "transaction_outcome": "HALTED_BEFORE_EFFECT"},
    },
    "false_saved_banner": {
        "outcome": "not_sure_if_saved",
        "reason": "save_not_confirmed",
        "safe_to_retry": False,
        "record_changed": "unknown",
        "proof": "none",
        "next_step": "check_record",
        "technical": {"execution_outcome": "HALTED", "transaction_outcome": "RECONCILIATION_REQUIRED"},
    },
    "timeout_after_save": {
        "outcome": "not_sure_if_saved",
        "reason": "save_not_confirmed",
        "safe_to_retry": False,
        "record_changed": "unknown",
        "proof": "none",
        "next_step": "check_record",
        "technical": {"execution_outcome": "HALTED", "transaction_outcome": "RECONCILIATION_REQUIRED"},
    },
    "app_offline": {
        "outcome": "did_not_run",
        "reason": "app_unreachable",
        "safe_to_retry": True,
        "record_changed": "no",
        "proof": "none",
        "next_step": "retry",
        # Checked before anything is sent: no Flow-shaped evidence.
        "technical": None,
    },
}


@pytest.mark.parametrize("case", list(EXPECTED))
async def test_sandbox_case(session: Session, case: str) -> None:
    request_id = f"case-{case}-{uuid.uuid4().hex[:8]}"
    r = await session.run(request_id, {"note": f"Synthetic triage note for {case}.", "sandbox_case": case})
    expected = EXPECTED[case]
    got = {k: r.get(k) for k in expected}
    assert got == expected
    assert r["mode"] == "sandbox"
    assert r["sandbox"] == {"case": case, "engine": "simulated"}
    assert r["request_id"] == request_id
    assert r["workflow"] == WORKFLOW
    assert "replayed" not in r
    # A finished run reads back the same through get_run.
    assert await session.result("get_run", {"run_id": r["run_id"]}) == r
    assert await session.result("get_run", {"run_id": r["run_id"], "wait_seconds": 0}) == r


async def test_sandbox_case_defaults_to_normal(session: Session) -> None:
    r = await session.run("default-case-1", {"note": "Synthetic note, no case given."})
    assert (r["outcome"], r["reason"], r["proof"]) == ("done", "saved_and_checked", "simulated")
    assert r["sandbox"] == {"case": "normal", "engine": "simulated"}


async def test_wait_zero_then_get_run(session: Session) -> None:
    r = await session.run("wait-zero-1", {"note": "Synthetic note."}, wait_seconds=0)
    assert r["outcome"] in ("running", "done")
    final = await session.result("get_run", {"run_id": r["run_id"], "wait_seconds": 30})
    assert (final["outcome"], final["reason"], final["run_id"]) == ("done", "saved_and_checked", r["run_id"])
    again = await session.run("wait-zero-1", {"note": "Synthetic note."})
    assert again["run_id"] == r["run_id"] and again["replayed"] is True


# ---------------------------------------------------------------------------------------------
# Requests: replay, conflict, retry


@pytest.mark.parametrize("case", ["normal", "duplicate_record", "false_saved_banner"])
async def test_repeat_replays_the_same_run(session: Session, case: str) -> None:
    inputs = {"note": "Synthetic note for a replay.", "sandbox_case": case}
    first = await session.run("replay-0001", inputs)
    again = await session.run("replay-0001", inputs)
    assert again["run_id"] == first["run_id"]
    assert again["replayed"] is True
    assert {k: v for k, v in again.items() if k != "replayed"} == first
    # The record itself is not a replay.
    assert await session.result("get_run", {"run_id": first["run_id"]}) == first


async def test_omitted_default_and_explicit_default_are_the_same_request(session: Session) -> None:
    first = await session.run("default-0001", {"note": "Same note."})
    again = await session.run("default-0001", {"note": "Same note.", "sandbox_case": "normal"})
    assert (again["run_id"], again["replayed"]) == (first["run_id"], True)


@pytest.mark.parametrize(
    "changed",
    [{"note": "A different note."}, {"note": "Synthetic note.", "sandbox_case": "duplicate_record"}],
    ids=["note", "sandbox_case"],
)
async def test_same_request_id_different_inputs_is_a_conflict(session: Session, changed: dict[str, str]) -> None:
    first = await session.run("conflict-0001", {"note": "Synthetic note."})
    assert first["outcome"] == "done"
    r = await session.run("conflict-0001", changed)
    assert (r["outcome"], r["reason"]) == ("did_not_run", "request_id_conflict")
    assert r["safe_to_retry"] is False
    assert r["record_changed"] == "unknown"
    assert r["next_step"] == "fix_inputs"
    assert r["first_run_id"] == first["run_id"]
    assert r["run_id"] != first["run_id"]
    assert r["request_id"] == "conflict-0001"
    assert "replayed" not in r
    # The conflict changed nothing: the first run is intact and the same inputs still replay it.
    assert await session.result("get_run", {"run_id": first["run_id"]}) == first
    again = await session.run("conflict-0001", {"note": "Synthetic note."})
    assert (again["run_id"], again["replayed"]) == (first["run_id"], True)
    assert await session.result("get_run", {"run_id": r["run_id"]}) == r


async def test_app_offline_retries_up_to_five_attempts(session: Session) -> None:
    inputs = {"note": "Synthetic note.", "sandbox_case": "app_offline"}
    attempts = []
    for _ in range(5):
        r = await session.run("offline-0001", inputs)
        assert (r["outcome"], r["reason"], r["safe_to_retry"]) == ("did_not_run", "app_unreachable", True)
        assert "replayed" not in r
        attempts.append(r)
    run_ids = [r["run_id"] for r in attempts]
    assert len(set(run_ids)) == 5, "each retry is a new attempt with its own run_id"
    for _ in range(2):
        r = await session.run("offline-0001", inputs)
        assert (r["outcome"], r["reason"]) == ("did_not_run", "retry_limit")
        assert r["safe_to_retry"] is False
        assert r["record_changed"] == "no"
        assert r["next_step"] == "fix_setup"
        assert r["run_id"] not in run_ids
    for attempt in attempts:
        assert await session.result("get_run", {"run_id": attempt["run_id"]}) == attempt


async def test_concurrent_calls_with_one_request_id_make_one_run(server: Server, session: Session) -> None:
    inputs = {"note": "Synthetic note, sent six times at once."}
    results: list[dict[str, Any]] = []

    async def one() -> None:
        results.append(await session.run("concurrent-0001", inputs))

    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(one)
    assert len({r["run_id"] for r in results}) == 1
    assert sum(1 for r in results if "replayed" not in r) == 1
    assert all(r["outcome"] == "done" for r in results)
    # Names starting with a dot are temp files: the server's spares for its next records.
    records = [p for p in (server.runs_dir / "openadapt-agent" / "runs").iterdir() if not p.name.startswith(".")]
    assert [p.name for p in records] == [results[0]["run_id"] + ".json"]


# ---------------------------------------------------------------------------------------------
# Invalid inputs: a contract result, did_not_run / invalid_input


# The reference's closed vocabulary. An unknown key is never echoed: it is reported as input
# "(unknown)", first; then the workflow's inputs by name.
UNKNOWN_KEY = {"input": "(unknown)", "problem": "isn't an input of this workflow; list_workflows has the names"}

INVALID_INPUTS: dict[str, tuple[dict[str, Any], list[dict[str, str]]]] = {
    "missing_note": ({}, [{"input": "note", "problem": "is missing"}]),
    "missing_note_with_case": ({"sandbox_case": "normal"}, [{"input": "note", "problem": "is missing"}]),
    "empty_note": ({"note": ""}, [{"input": "note", "problem": "is too short"}]),
    "too_long_note": ({"note": "x" * 501}, [{"input": "note", "problem": "is too long"}]),
    "too_long_multibyte_note": ({"note": "é" * 501}, [{"input": "note", "problem": "is too long"}]),
    "note_number": ({"note": 5}, [{"input": "note", "problem": "must be text"}]),
    "note_null": ({"note": None}, [{"input": "note", "problem": "must be text"}]),
    "note_list": ({"note": ["a"]}, [{"input": "note", "problem": "must be text"}]),
    "note_object": ({"note": {"text": "a"}}, [{"input": "note", "problem": "must be text"}]),
    "note_bool": ({"note": True}, [{"input": "note", "problem": "must be text"}]),
    "case_number": ({"note": "x", "sandbox_case": 3}, [{"input": "sandbox_case", "problem": "must be text"}]),
    "bad_enum": (
        {"note": "x", "sandbox_case": "explode"},
        [{"input": "sandbox_case", "problem": "must be one of the listed values"}],
    ),
    "enum_wrong_case": (
        {"note": "x", "sandbox_case": "NORMAL"},
        [{"input": "sandbox_case", "problem": "must be one of the listed values"}],
    ),
    "empty_enum": ({"note": "x", "sandbox_case": ""}, [{"input": "sandbox_case", "problem": "must be one of the listed values"}]),
    "unknown_key": ({"note": "x", "patient_name": "y"}, [UNKNOWN_KEY]),
    "two_unknown_keys": ({"note": "x", "a": 1, "b": 2}, [UNKNOWN_KEY]),
    "everything_wrong": (
        {"note": "", "sandbox_case": "explode", "extra": 1},
        [
            UNKNOWN_KEY,
            {"input": "note", "problem": "is too short"},
            {"input": "sandbox_case", "problem": "must be one of the listed values"},
        ],
    ),
}


@pytest.mark.parametrize("name", list(INVALID_INPUTS))
async def test_invalid_inputs_are_named(server: Server, session: Session, name: str) -> None:
    inputs, problems = INVALID_INPUTS[name]
    r = await session.run("invalid-0001", inputs)
    assert (r["outcome"], r["reason"]) == ("did_not_run", "invalid_input")
    assert (r["safe_to_retry"], r["record_changed"], r["next_step"], r["proof"]) == (True, "no", "fix_inputs", "none")
    assert r["invalid_inputs"] == problems
    assert "sandbox" not in r
    assert await session.result("get_run", {"run_id": r["run_id"]}) == r
    # Nothing ran: the simulated app was never touched.
    notes = server.store_dir / "notes"
    assert not notes.exists() or not any(notes.rglob("*.json"))
    # Refusals reserve nothing: a valid call under the same request_id runs normally.
    ok = await session.run("invalid-0001", {"note": "Now a valid note."})
    assert (ok["outcome"], ok["reason"]) == ("done", "saved_and_checked")
    assert "replayed" not in ok and ok["run_id"] != r["run_id"]


@pytest.mark.parametrize("note", ["x", "x" * 500, "é" * 500], ids=["1", "500", "500-multibyte"])
async def test_note_length_limits_are_inclusive(session: Session, note: str) -> None:
    r = await session.run(f"length-{len(note)}-{uuid.uuid4().hex[:6]}", {"note": note})
    assert (r["outcome"], r["reason"]) == ("done", "saved_and_checked")


# ---------------------------------------------------------------------------------------------
# Arguments that fail the tool's inputSchema: a tool error with a fixed sentence


def run_args(**override: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"workflow": WORKFLOW, "inputs": {"note": "Synthetic note."}, "request_id": "schema-0001"}
    for k, v in override.items():
        if v is DROP:
            args.pop(k)
        else:
            args[k] = v
    return args


DROP = object()

# (tool, arguments, values that must not be echoed)
SCHEMA_FAILURES: dict[str, tuple[str, dict[str, Any] | None, list[str]]] = {
    "unknown_workflow": ("run_workflow", run_args(workflow="no_such_workflow_qzx"), ["no_such_workflow_qzx", "qzx"]),
    "workflow_not_text": ("run_workflow", run_args(workflow=7), []),
    "request_id_traversal": ("run_workflow", run_args(request_id="../x"), ["../x"]),
    "request_id_deep_traversal": ("run_workflow", run_args(request_id="../../etc/passwd"), ["../", "passwd"]),
    "request_id_slash": ("run_workflow", run_args(request_id="abcd/efgh"), ["abcd/efgh"]),
    "request_id_backslash": ("run_workflow", run_args(request_id="abcd\\efgh"), ["abcd\\efgh"]),
    "request_id_too_short": ("run_workflow", run_args(request_id="ab"), []),
    "request_id_three": ("run_workflow", run_args(request_id="abc"), []),
    "request_id_empty": ("run_workflow", run_args(request_id=""), []),
    "request_id_leading_dot": ("run_workflow", run_args(request_id=".hidden-id"), [".hidden-id"]),
    "request_id_space": ("run_workflow", run_args(request_id="req id qzx"), ["req id qzx"]),
    "request_id_too_long": ("run_workflow", run_args(request_id="r" * 129), ["r" * 20]),
    "request_id_number": ("run_workflow", run_args(request_id=12345), []),
    "request_id_missing": ("run_workflow", run_args(request_id=DROP), []),
    "inputs_missing": ("run_workflow", run_args(inputs=DROP), []),
    "inputs_not_object": ("run_workflow", run_args(inputs="note=qzx"), ["note=qzx"]),
    "workflow_missing": ("run_workflow", run_args(workflow=DROP), []),
    "run_unknown_argument": ("run_workflow", run_args(unknown_arg_qzx=1), ["unknown_arg_qzx"]),
    "run_wait_601": ("run_workflow", run_args(wait_seconds=601), ["601"]),
    "run_wait_negative": ("run_workflow", run_args(wait_seconds=-1), []),
    "run_wait_fraction": ("run_workflow", run_args(wait_seconds=1.5), ["1.5"]),
    "run_wait_text": ("run_workflow", run_args(wait_seconds="10"), []),
    "run_no_arguments": ("run_workflow", None, []),
    "run_id_etc_passwd": ("get_run", {"run_id": "../etc/passwd"}, ["../", "passwd"]),
    "run_id_traversal": ("get_run", {"run_id": "run-../x"}, ["run-../x", "../"]),
    "run_id_deep_traversal": ("get_run", {"run_id": "run-../../../etc/passwd"}, ["../", "passwd"]),
    "run_id_absolute": ("get_run", {"run_id": "/etc/passwd"}, ["passwd"]),
    "run_id_slash": ("get_run", {"run_id": "run-a/b"}, ["run-a/b"]),
    "run_id_nul": ("get_run", {"run_id": "run-abc\u0000def"}, ["run-abc"]),
    "run_id_prefix_only": ("get_run", {"run_id": "run-"}, []),
    "run_id_empty": ("get_run", {"run_id": ""}, []),
    "run_id_no_prefix": ("get_run", {"run_id": "0123456789abcdef01234567"}, ["0123456789abcdef01234567"]),
    "run_id_too_long": ("get_run", {"run_id": "run-" + "a" * 125}, ["a" * 20]),
    "run_id_number": ("get_run", {"run_id": 5}, []),
    "run_id_missing": ("get_run", {}, []),
    "get_run_unknown_argument": ("get_run", {"run_id": "run-0123456789abcdef01234567", "extra_qzx": 1}, ["extra_qzx"]),
    "get_run_wait_601": ("get_run", {"run_id": "run-0123456789abcdef01234567", "wait_seconds": 601}, ["601"]),
    "list_unknown_argument": ("list_workflows", {"verbose_qzx": True}, ["verbose_qzx"]),
}


@pytest.mark.parametrize("name", list(SCHEMA_FAILURES))
async def test_arguments_failing_the_input_schema_are_a_tool_error(server: Server, session: Session, name: str) -> None:
    tool, arguments, secrets = SCHEMA_FAILURES[name]
    # The fixed sentence: what an unrelated schema failure answers.
    fixed = await session.error("run_workflow", {})
    sentence = await session.error(tool, copy.deepcopy(arguments))
    assert sentence == fixed
    for secret in secrets:
        assert secret not in sentence
    # It changed nothing: no request, claim or run was recorded.
    root = server.runs_dir / "openadapt-agent"
    for sub in ("claims", "requests", "runs"):
        assert list((root / sub).iterdir()) == [], sub


@pytest.mark.parametrize(
    "run_id",
    ["run-0123456789abcdef01234567", "run-..", "run-.", "run-nonexistent.json", "run-QZX_never-seen"],
)
async def test_get_run_of_an_unknown_run_is_a_tool_error(session: Session, run_id: str) -> None:
    await session.run("known-0001", {"note": "Synthetic note."})
    sentence = await session.error("get_run", {"run_id": run_id})
    assert run_id not in sentence
    assert sentence == await session.error("get_run", {"run_id": "run-ffffffffffffffffffffffff"})


async def test_unknown_tool_is_a_tool_error(session: Session) -> None:
    sentence = await session.error("delete_everything_qzx", {"note": "x"})
    assert "delete_everything_qzx" not in sentence


# ---------------------------------------------------------------------------------------------
# The PHI boundary


def files_outside_store(server: Server) -> list[Path]:
    store = server.store_dir.resolve()
    return [
        p
        for p in server.root.rglob("*")
        if p.is_file() and not p.resolve().is_relative_to(store)
    ]


def canary_hits(data: bytes | str, marks: list[str]) -> list[str]:
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    hits = []
    for mark in marks:
        for form in (mark, mark.lower(), mark.encode().hex()):
            if form in text:
                hits.append(form)
    return hits


async def exercise_with_canaries(session: Session, marks: list[str]) -> None:
    """Sends canaries through every kind of call: each case, replay, conflict, retry, invalid
    inputs (as values, as an unknown key, as an enum value), schema failures, get_run."""
    note = f"Patient note {marks[0]} synthetic."
    await session.result("list_workflows", {})
    run_ids = []
    for case in EXPECTED:
        r = await session.run(f"phi-{case}", {"note": f"{note} {case}", "sandbox_case": case})
        run_ids.append(r["run_id"])
    await session.run("phi-normal", {"note": f"{note} normal", "sandbox_case": "normal"})  # replay
    await session.run("phi-normal", {"note": f"Other {marks[1]}", "sandbox_case": "normal"})  # conflict
    await session.run("phi-app_offline", {"note": f"{note} app_offline", "sandbox_case": "app_offline"})  # retry
    await session.run("phi-invalid-1", {"note": note + "x" * 500})  # too long
    await session.run("phi-invalid-2", {"note": note, marks[1]: note})  # unknown key
    await session.run("phi-invalid-3", {"note": note, "sandbox_case": marks[1]})  # bad enum value
    await session.run("phi-invalid-4", {"note": {marks[1]: note}})  # wrong type
    await session.error("run_workflow", run_args(request_id="phi-schema-1", **{marks[1]: note}))
    await session.error("run_workflow", run_args(request_id="phi-schema-2", workflow=marks[1]))
    await session.error("run_workflow", run_args(request_id="phi-schema-3", inputs=note))
    await session.error("get_run", {"run_id": f"run-{marks[1]}"})
    await session.error(marks[1], {"note": note})
    for run_id in run_ids:
        await session.result("get_run", {"run_id": run_id})


async def test_phi_canaries_never_leave_through_outputs_files_or_stderr(server: Server) -> None:
    marks = [canary(), canary()]
    async with server.connect() as session:
        await exercise_with_canaries(session, marks)
    # The scan finds canaries where they legitimately are: MockMed's own records.
    stored = b"".join(p.read_bytes() for p in server.store_dir.rglob("*") if p.is_file())
    assert canary_hits(stored, marks[:1]), "positive control: the simulated app stored the note"
    assert canary_hits("\n".join(session.transcript), marks) == [], "tool output"
    for path in files_outside_store(server):
        assert canary_hits(path.read_bytes(), marks) == [], path
    assert canary_hits(server.stderr(), marks) == [], "server stderr"
    # Nothing is written where the client launched the server.
    assert list(server.launch_dir.iterdir()) == []


async def test_phi_canaries_stay_out_of_stderr_at_debug_log_level(server: Server) -> None:
    server.log_level = "debug"
    marks = [canary(), canary()]
    async with server.connect() as session:
        await exercise_with_canaries(session, marks)
    assert canary_hits(server.stderr(), marks) == [], "server stderr at debug level"


# ---------------------------------------------------------------------------------------------
# The runs directory


def modes_of(paths: list[Path]) -> dict[str, str]:
    return {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in paths}


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Starts the server under a given umask (the test's parameter), so modes come from the server's
    own choice, not from whatever umask the test run happens to have."""
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


# The umask fixture comes before `session` so the server is started under it.
@pytest.mark.parametrize("umask", [0o000], indirect=True, ids=["umask-000"])
async def test_runs_dir_is_private(umask: int, server: Server, session: Session) -> None:
    await session.run("private-0001", {"note": "Synthetic note."})
    await session.run("private-0002", {"note": "Synthetic note.", "sandbox_case": "app_offline"})
    await session.run("private-0003", {})
    root = server.runs_dir / "openadapt-agent"
    store = server.store_dir
    ledger = [root, *(p for p in root.rglob("*") if p != store and not p.is_relative_to(store))]
    dirs = [p for p in ledger if p.is_dir()]
    files = [p for p in ledger if not p.is_dir()]
    assert len(files) >= 5
    assert {m for m in modes_of(dirs).values()} == {"0o700"}, modes_of(dirs)
    assert {m for m in modes_of(files).values()} == {"0o600"}, modes_of(files)
    assert stat.S_IMODE(store.stat().st_mode) == 0o700


@pytest.mark.parametrize("umask", [0o022], indirect=True, ids=["umask-022"])
async def test_mockmed_store_contents_are_private(umask: int, server: Server, session: Session) -> None:
    await session.run("private-0001", {"note": "Synthetic note."})
    inside = list(server.store_dir.rglob("*"))
    assert inside
    dirs = [p for p in inside if p.is_dir()]
    files = [p for p in inside if not p.is_dir()]
    assert {m for m in modes_of(dirs).values()} <= {"0o700"}, modes_of(dirs)
    assert {m for m in modes_of(files).values()} == {"0o600"}, modes_of(files)
