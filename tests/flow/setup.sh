#!/usr/bin/env bash
# Prepares the real openadapt-flow toolchain for the production-mode tests.
#
# Idempotent. Run as root on a fresh Debian machine (CI runs it the same way):
#   bash tests/flow/setup.sh
# then, in the shell that runs the tests:
#   . target/flow-env.sh
#
# What it does:
#   1. installs Debian's chromium when /usr/lib/chromium/chromium is missing
#      (Playwright's own browser download is not reachable from here);
#   2. creates target/flow-venv with the pins of tests/flow/requirements.txt;
#   3. builds target/flow-browsers, a PLAYWRIGHT_BROWSERS_PATH folder whose
#      browser executables are symlinks to Debian's chromium, named after the
#      revisions the installed Playwright expects;
#   4. writes target/flow-env.sh with the environment the tests need.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="$target/flow-venv"
browsers="$target/flow-browsers"
envfile="$target/flow-env.sh"
chromium=/usr/lib/chromium/chromium
python="${PYTHON:-python3}"

log() { printf 'flow-setup: %s\n' "$*" >&2; }

# 1. Debian's chromium.
if [ ! -x "$chromium" ]; then
    log "installing Debian chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
fi
[ -x "$chromium" ] || { log "no chromium at $chromium"; exit 1; }

# 2. The venv, reinstalled only when requirements.txt changed.
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    # A fresh Debian has no python3 or no venv module (python3-venv): install them.
    if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1 && command -v apt-get >/dev/null; then
        log "installing python3-venv"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq python3-venv >/dev/null
    fi
    log "creating $venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
    echo "$want" >"$stamp"
fi

# 3. The browsers folder, from the installed Playwright's browsers.json.
"$venv/bin/python" - "$browsers" "$chromium" <<'PY'
import json, os, sys
from pathlib import Path

import playwright

out, chromium = Path(sys.argv[1]), sys.argv[2]
spec = json.loads((Path(playwright.__file__).parent / "driver/package/browsers.json").read_text())
revs = {b["name"]: b["revision"] for b in spec["browsers"]}
# Where Playwright looks for each browser on linux x64 (its registry's layout).
layout = {
    "chromium": "chrome-linux64/chrome",
    "chromium-headless-shell": "chrome-headless-shell-linux64/chrome-headless-shell",
}
out.mkdir(parents=True, exist_ok=True)
for name, rel in layout.items():
    if name not in revs:
        continue
    folder = out / f"{name.replace('-', '_')}-{revs[name]}"
    exe = folder / rel
    exe.parent.mkdir(parents=True, exist_ok=True)
    if not (exe.is_symlink() and os.readlink(exe) == chromium):
        if exe.is_symlink() or exe.exists():
            exe.unlink()
        exe.symlink_to(chromium)
        print(f"flow-setup: {folder.name} -> {chromium}", file=sys.stderr)
    (folder / "INSTALLATION_COMPLETE").touch()
PY

# 4. The environment for the tests.
cat >"$envfile" <<EOF
# Written by tests/flow/setup.sh; source it before the flow tests.
export FLOW_VENV='$venv'
export OPENADAPT_FLOW='$venv/bin/openadapt-flow'
export FLOW_PYTHON='$venv/bin/python'
export PLAYWRIGHT_BROWSERS_PATH='$browsers'
export OPENADAPT_FLOW_NO_AUTO_INSTALL=1
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
EOF
log "ready; source $envfile"
cat "$envfile"
