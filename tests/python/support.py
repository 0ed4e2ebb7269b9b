"""Helpers of the Python black-box tests: start the real server through the `mcp` SDK and check
every answer it gives against the tool schemas and the result contract."""

from __future__ import annotations

import json
import os
import re
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
REFERENCE = json.loads((HERE / "reference-sandbox-tool-schemas.json").read_text())
TOOL_NAMES = ("list_workflows", "run_workflow", "get_run")
WORKFLOW = "add_triage_note"
CONTRACT_VERSION = "openadapt.run-result/v1"
RUN_ID = re.compile(r"^run-[0-9a-f]{24}$")

# reason -> (outcome, safe_to_retry, record_changed, next_step), as the contract fixes them.
REASONS: dict[str, tuple[str, bool, str, str]] = {
    "saved_and_checked": ("done", False, "yes", "none"),
    **{
        r: ("needs_review", False, "no", "wait_for_person")
        for r in (
            "record_not_confirmed",
            "unexpected_screen",
            "person_needed",
            "record_check_not_set_up",
            "stopped_for_review",
            "approval_needed",
        )
    },
    "waiting_for_approval": ("needs_review", False, "unknown", "wait_for_person"),
    **{
        r: ("not_sure_if_saved", False, "unknown", "check_record")
        for r in (
            "save_not_confirmed",
            "not_checked",
            "checked_below_minimum",
            "change_reversed",
            "timed_out",
            "result_unreadable",
            "interrupted",
        )
    },
    "invalid_input": ("did_not_run", True, "no", "fix_inputs"),
    "unknown_workflow": ("did_not_run", True, "no", "fix_inputs"),
    **{
        r: ("did_not_run", True, "no", "fix_setup")
        for r in ("not_ready_to_run", "workflow_unavailable", "runs_disabled", "policy_refused")
    },
    **{r: ("did_not_run", True, "no", "retry") for r in ("app_unreachable", "canceled", "platform_error")},
    "request_id_conflict": ("did_not_run", False, "unknown", "fix_inputs"),
    "retry_limit": ("did_not_run", False, "no", "fix_setup"),
    "stopped_by_person": ("did_not_run", False, "no", "none"),
    "running": ("running", False, "unknown", "call_get_run"),
}


def schema_errors(schema: dict[str, Any], instance: Any) -> list[str]:
    Draft202012Validator.check_schema(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in Draft202012Validator(schema).iter_errors(instance)
    ]


def check_run_result(r: dict[str, Any]) -> None:
    """What holds for every run_workflow / get_run result, whatever the call was."""
    assert r["contract_version"] == CONTRACT_VERSION
    assert r["mode"] == "sandbox"
    assert r["reason"] in REASONS, r["reason"]
    outcome, retry, changed, next_step = REASONS[r["reason"]]
    got = (r["outcome"], r["safe_to_retry"], r["record_changed"], r["next_step"])
    assert got == (outcome, retry, changed, next_step), f"{r['reason']}: {got}"
    for text in ("label", "what_happened", "next_action"):
        assert isinstance(r[text], str) and r[text].strip(), text
    assert r["run_id"] is not None and RUN_ID.match(r["run_id"]), r["run_id"]
    assert r["workflow"] == WORKFLOW
    assert isinstance(r["request_id"], str)
    if "replayed" in r:
        assert r["replayed"] is True
    assert ("invalid_inputs" in r) == (r["reason"] == "invalid_input")
    assert ("first_run_id" in r) == (r["reason"] == "request_id_conflict")
    if "first_run_id" in r:
        assert RUN_ID.match(r["first_run_id"])
    assert ("failed_checks" in r) == (r["reason"] == "not_ready_to_run")
    if r["outcome"] != "done":
        assert r["proof"] == "none"


@dataclass
class Reply:
    """One tools/call answer: a tool error (a sentence) or a structured result."""

    is_error: bool
    text: str
    structured: dict[str, Any] | None


@dataclass
class Session:
    """A connected SDK client. Every call is recorded (for the PHI scans) and checked: one text
    block; errors carry no structuredContent; results validate against the outputSchema listed by
    the server and the reference's, and their text is the JSON of their structuredContent."""

    client: Client
    tools: dict[str, Any]
    transcript: list[str] = field(default_factory=list)

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> Reply:
        result = await self.client.call_tool(name, arguments)
        self.transcript.append(json.dumps(result.model_dump(mode="json", by_alias=True)))
        assert len(result.content) == 1, result.content
        block = result.content[0]
        assert block.type == "text", block
        if result.is_error:
            assert result.structured_content is None, "an error result carries no structuredContent"
            return Reply(True, block.text, None)
        structured = result.structured_content
        assert isinstance(structured, dict), structured
        assert json.loads(block.text) == structured, "the text content is the JSON of structuredContent"
        listed = self.tools[name].output_schema
        assert listed is not None, f"{name} lists no outputSchema"
        assert schema_errors(listed, structured) == []
        assert schema_errors(REFERENCE[name]["outputSchema"], structured) == []
        if name in ("run_workflow", "get_run"):
            check_run_result(structured)
        return Reply(False, block.text, structured)

    async def result(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = await self.call(name, arguments)
        assert not reply.is_error, f"{name} answered a tool error: {reply.text}"
        assert reply.structured is not None
        return reply.structured

    async def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        reply = await self.call(name, arguments)
        assert reply.is_error, f"{name} answered a result, not a tool error: {reply.structured}"
        return reply.text

    async def run(self, request_id: str, inputs: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return await self.result(
            "run_workflow", {"workflow": WORKFLOW, "inputs": inputs, "request_id": request_id, **extra}
        )


@dataclass
class Server:
    """One server setup: a client mode, a private tmp tree (runs dir, HOME, launch dir) and the
    file the server's stderr goes to."""

    bin: Path
    mode: str
    root: Path
    log_level: str | None = None

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def store_dir(self) -> Path:
        """MockMed's own record store: the simulated app's records, which hold the notes."""
        return self.runs_dir / "openadapt-agent" / "mockmed-store"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def launch_dir(self) -> Path:
        return self.root / "cwd"

    @property
    def stderr_path(self) -> Path:
        return self.root / "server-stderr.log"

    def env(self) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": str(self.home)}
        if self.log_level is not None:
            env["OPENADAPT_AGENT_LOG"] = self.log_level
        return env

    def params(self) -> StdioServerParameters:
        for d in (self.home, self.launch_dir):
            d.mkdir(parents=True, exist_ok=True)
        return StdioServerParameters(
            command=str(self.bin),
            args=["serve", "--runs-dir", str(self.runs_dir)],
            # The SDK passes only a few variables of its own environment; give the server exactly
            # what it needs, with HOME in the test's tmp dir.
            env=self.env(),
            cwd=str(self.launch_dir),
        )

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Session]:
        with open(self.stderr_path, "a") as errlog:
            # `Client(StdioServerParameters(...))` would send the server's stderr to ours; the same
            # stdio transport, built explicitly, lets the tests read it.
            transport = stdio_client(self.params(), errlog=errlog)
            async with Client(transport, mode=self.mode, read_timeout_seconds=60) as client:
                listed = (await client.list_tools()).tools
                yield Session(client, {t.name: t for t in listed})

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
