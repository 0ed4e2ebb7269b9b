"""The server's stdout, byte for byte, without any SDK: every line is one JSON-RPC 2.0 message."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
TIMEOUT = 60.0


class RawServer:
    """The server as a subprocess with pipes; a thread collects its stdout lines as raw bytes."""

    def __init__(self, server_bin: Path, tmp: Path) -> None:
        (tmp / "home").mkdir()
        (tmp / "cwd").mkdir()
        self.stderr_file = open(tmp / "server-stderr.log", "wb")
        self.proc = subprocess.Popen(
            [str(server_bin), "serve", "--runs-dir", str(tmp / "runs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp / "home")},
            cwd=tmp / "cwd",
        )
        self.lines: list[bytes] = []
        self.parsed: queue.Queue[dict[str, Any]] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                continue  # reported by the test, from self.lines
            if isinstance(message, dict):
                self.parsed.put(message)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def responses(self, ids: set[int]) -> dict[int, dict[str, Any]]:
        """Waits for a response to each of `ids` (in any order: the server answers concurrently)."""
        got: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + TIMEOUT
        while not ids <= got.keys():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no response to {sorted(ids - got.keys())}"
            try:
                message = self.parsed.get(timeout=remaining)
            except queue.Empty:
                continue
            if "id" in message and "method" not in message:
                assert message["id"] not in got, f"two responses to id {message['id']}"
                got[message["id"]] = message
        return got

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.reader.join(timeout=TIMEOUT)
            self.stderr_file.close()
        return code


def call(id_: int, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def test_every_stdout_line_is_a_json_rpc_message(server_bin: Path, tmp_path: Path) -> None:
    server = RawServer(server_bin, tmp_path)
    try:
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "raw-stdio-test", "version": "0"},
                },
            }
        )
        init = server.responses({1})[1]
        assert init["result"]["protocolVersion"] == PROTOCOL_VERSION
        assert init["result"]["serverInfo"]["name"] == "openadapt-agent"
        assert "tools" in init["result"]["capabilities"]
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        workflow = "add_triage_note"
        requests = [
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
            call(3, "list_workflows", {}),
            call(4, "run_workflow", {"workflow": workflow, "inputs": {"note": "Raw note."}, "request_id": "raw-0001"}),
            call(5, "run_workflow", {"workflow": workflow, "inputs": {"note": "Raw note."}, "request_id": "raw-0001"}),
            call(6, "run_workflow", {"workflow": workflow, "inputs": {}, "request_id": "raw-0002"}),
            call(
                7,
                "run_workflow",
                {"workflow": workflow, "inputs": {"note": "Raw.", "sandbox_case": "app_offline"}, "request_id": "raw-0003"},
            ),
            call(8, "get_run", {"run_id": "run-../x"}),
            call(9, "get_run", {"run_id": "run-0123456789abcdef01234567"}),
            call(10, "run_workflow", {"workflow": "nope", "inputs": {}, "request_id": "../x"}),
            call(11, "no_such_tool", {}),
            call(12, "list_workflows", None),
            {"jsonrpc": "2.0", "id": 13, "method": "no/such/method", "params": {}},
            {"jsonrpc": "2.0", "id": 14, "method": "ping"},
        ]
        for request in requests:
            server.send(request)
        answers = server.responses({r["id"] for r in requests})
    finally:
        code = server.close()

    # The tools and the calls came back as they should.
    assert sorted(t["name"] for t in answers[2]["result"]["tools"]) == ["get_run", "list_workflows", "run_workflow"]
    structured = {3: "list_workflows", 4: "done", 5: "done", 6: "did_not_run", 7: "did_not_run", 12: "list_workflows"}
    for id_, expect in structured.items():
        result = answers[id_]["result"]
        assert result.get("isError") is not True, id_
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"], id_
        if expect in ("done", "did_not_run"):
            assert result["structuredContent"]["outcome"] == expect, id_
    # 4 and 5 are in flight together: one of them runs, the other answers the same run, replayed.
    pair = [answers[i]["result"]["structuredContent"] for i in (4, 5)]
    assert pair[0]["run_id"] == pair[1]["run_id"]
    assert sorted(r.get("replayed", False) for r in pair) == [False, True]
    for id_ in (8, 9, 10, 11):
        result = answers[id_]["result"]
        assert result["isError"] is True, id_
        # Absent, not null: strict clients validate any structuredContent present.
        assert "structuredContent" not in result, id_
        assert "../x" not in result["content"][0]["text"]
    assert "error" in answers[13] and answers[13]["error"]["code"] == -32601
    assert answers[14].get("result") == {}

    # Every stdout line, without exception, is one JSON-RPC 2.0 message.
    assert server.lines, "the server wrote nothing"
    assert all(line.endswith(b"\n") for line in server.lines), "every message ends its line"
    sent_ids = {1} | {r["id"] for r in requests}
    for raw in server.lines:
        message = json.loads(raw)  # fails on any stray output
        assert isinstance(message, dict), raw
        assert message.get("jsonrpc") == "2.0", raw
        if "method" in message:  # a request or a notification from the server
            assert isinstance(message["method"], str), raw
            assert "result" not in message and "error" not in message, raw
        else:  # a response
            assert message.get("id") in sent_ids, raw
            assert ("result" in message) != ("error" in message), raw
    responses = [json.loads(raw) for raw in server.lines if "method" not in json.loads(raw)]
    assert sorted(m["id"] for m in responses) == sorted(sent_ids), "each request answered exactly once"

    # Closing stdin ends the server cleanly.
    assert code == 0
