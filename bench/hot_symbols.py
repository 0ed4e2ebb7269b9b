#!/usr/bin/env python3
"""Writes host/link/hot-symbols.txt: the functions one sandbox session runs, for lld to lay out
together at the front of the text (see host/build.rs).

A server's resident memory is mostly code, and the kernel maps at least 64 KiB around every code
page a process touches. Scattered over 13 MB of text, the few MB a session runs kept about 10 MB
resident; packed together they keep about 5.

How: copy the binary, drop the copy from the page cache, turn readahead off for its disk, run one
session against it (every sandbox case, replays, get_run, a conflict, bad inputs), then ask the
kernel which of the copy's 4 KiB pages were read in (mincore). With readahead off, those are the
pages the session touched. Every text symbol on such a page is listed, in address order.

Run it on a release build made with the current list (or none), as root, on Linux, and commit the
result: `sudo python3 bench/hot_symbols.py`. Running it twice in a row tightens the list, since
the second run sees the first run's layout. Symbol names carry hashes that change with the
toolchain and dependency versions, so regenerate the list after changing either; a stale list
only costs memory.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import Server, fresh_request_id, run_args  # noqa: E402

PAGE = 4096
CASES = ["duplicate_record", "false_saved_banner", "timeout_after_save", "app_offline"]


def session(exe: str, cache: str, runs: int) -> None:
    """What clients do with a sandbox server, each path at least once."""
    runs_dir = tempfile.mkdtemp(prefix="hot-symbols-runs-")
    os.environ["XDG_CACHE_HOME"] = cache
    s = Server("ours", [exe, "serve", "--runs-dir", runs_dir], runs_dir)
    try:
        s.initialize()
        s.tools_list()

        def call(name: str, arguments: dict) -> dict:
            return s.request("tools/call", {"name": name, "arguments": arguments})[1]["result"]

        call("list_workflows", {})
        done = []
        for _ in range(runs):
            rid = fresh_request_id()
            done.append((rid, s.new_run(rid)[1]))
        for rid, run_id in done[:5]:
            s.replay(rid, run_id)
            s.get_run(run_id)
        for case in CASES:
            args = run_args(fresh_request_id())
            args["inputs"]["sandbox_case"] = case
            call("run_workflow", args)
            call("run_workflow", args)
        conflict = run_args(done[0][0])
        conflict["inputs"]["note"] = "another note"
        call("run_workflow", conflict)
        for bad in ({"bogus": 1}, {"note": ""}, {"note": 7}):
            args = run_args(fresh_request_id())
            args["inputs"].update(bad)
            call("run_workflow", args)
        call("run_workflow", {"workflow": "nope", "request_id": fresh_request_id(), "inputs": {}})
        call("get_run", {"run_id": "../escape"})
    finally:
        s.close()
        shutil.rmtree(runs_dir, ignore_errors=True)


def readahead_knob(path: str) -> str:
    """sysfs readahead setting of the disk that holds `path`."""
    st = os.stat(path)
    dev = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    for candidate in (f"{dev}/queue/read_ahead_kb", f"{dev}/../queue/read_ahead_kb"):
        if os.path.exists(candidate):
            return candidate
    raise SystemExit(f"no readahead setting found under {dev}: is {path} on a block device?")


def resident_pages(path: str) -> list[int]:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        vec = (ctypes.c_ubyte * ((size + PAGE - 1) // PAGE))()
        if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))
        return [i for i, v in enumerate(vec) if v & 1]
    finally:
        os.close(fd)


def evict(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    left = len(resident_pages(path))
    if left:
        raise SystemExit(f"{path}: {left} pages stayed in the page cache; is something else running it?")


def touched_pages(exe: str, runs: int, work: str) -> set[int]:
    probe = os.path.join(work, "probe")
    shutil.copy2(exe, probe)
    cache = os.path.join(work, "cache")
    session(probe, cache, runs)  # fills the engine cache, as on any machine after the first start
    evict(probe)
    knob = readahead_knob(probe)
    with open(knob) as f:
        saved = f.read().strip()
    with open(knob, "w") as f:
        f.write("0")
    try:
        session(probe, cache, runs)
    finally:
        with open(knob, "w") as f:
            f.write(saved)
    return set(resident_pages(probe))


def hot_symbols(exe: str, pages: set[int]) -> tuple[list[str], int, int]:
    """Text symbols that overlap a touched page, in address order."""
    segments = []
    for row in subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True, check=True).stdout.splitlines():
        f = row.split()
        if f and f[0] == "LOAD":
            segments.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    nm = subprocess.run(["nm", "-n", "-S", "--defined-only", exe], capture_output=True, text=True, check=True).stdout
    hot, hot_bytes, text_bytes = [], 0, 0
    for row in nm.splitlines():
        f = row.split()
        if len(f) != 4 or f[2] not in "tTwW":
            continue
        addr, size, name = int(f[0], 16), int(f[1], 16), f[3]
        text_bytes += size
        for off, vaddr, filesz in segments:
            if vaddr <= addr < vaddr + filesz:
                start = addr - vaddr + off
                if any(p in pages for p in range(start // PAGE, (start + max(size, 1) - 1) // PAGE + 1)):
                    hot.append(name)
                    hot_bytes += size
                break
    return hot, hot_bytes, text_bytes


def main() -> None:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(repo, "target", "release", "openadapt-agent"))
    ap.add_argument("--out", default=os.path.join(repo, "host", "link", "hot-symbols.txt"))
    ap.add_argument("--runs", type=int, default=20, help="new runs in the session (default 20)")
    args = ap.parse_args()
    # The copy sits beside the binary, on the disk whose readahead is turned off for a moment.
    work = tempfile.mkdtemp(prefix="hot-symbols-", dir=os.path.dirname(os.path.abspath(args.binary)))
    try:
        pages = touched_pages(args.binary, args.runs, work)
        hot, hot_bytes, text_bytes = hot_symbols(args.binary, pages)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(args.out, "w") as f:
        f.writelines(name + "\n" for name in hot)
    print(f"{args.out}: {len(hot)} symbols, {hot_bytes // 1024} of {text_bytes // 1024} KiB of text "
          f"({len(pages)} pages of the file touched)", file=sys.stderr)


if __name__ == "__main__":
    main()
