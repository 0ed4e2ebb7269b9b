#!/usr/bin/env bash
# Records a real openadapt-flow bundle with `openadapt-flow tutorial` and leaves
# it at OUT_DIR (workflow.json, manifest.json, sections.json, workflow.py,
# templates/). Headless (the tutorial's default); about 40 s on 2 cores.
#
#   bash tests/flow/setup.sh && . target/flow-env.sh
#   tests/flow/make-tutorial-bundle.sh /tmp/bundles/local_quickstart
#
# The tutorial records against its own MockMed on an ephemeral port, compiles,
# certifies in memory, runs once under the standard profile and writes
# <out>/{recording,bundle,run}. Only <out>/bundle is kept; the bundle on disk is
# NOT marked certified (certification happened in memory only) and is not
# encrypted. HOME points at a scratch folder because Flow writes
# ~/.openadapt/durable-authority and chromium writes ~/.config, ~/.cache.
#
# --bind-params: Flow mines the save's record check (`field_equals` on the
# note) with the DEMONSTRATED value as a literal, so a run with any other note
# halts RECONCILIATION_REQUIRED. With this flag every such literal that equals
# a parameter's recorded value is rebound to read that parameter (the operator
# review Flow leaves open), and the manifest is re-sealed (new content digest,
# so a new workflow id). The reference agent's sandbox does the same review.
set -euo pipefail
bind=0
if [ "${1:-}" = "--bind-params" ]; then bind=1; shift; fi
out="${1:?usage: make-tutorial-bundle.sh [--bind-params] OUT_DIR [NAME]}"
name="${2:-local-quickstart}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
flow="${OPENADAPT_FLOW:-$here/../../target/flow-venv/bin/openadapt-flow}"
export PLAYWRIGHT_BROWSERS_PATH="${PLAYWRIGHT_BROWSERS_PATH:-$here/../../target/flow-browsers}"
export OPENADAPT_FLOW_NO_AUTO_INSTALL=1

[ -e "$out" ] && { echo "make-tutorial-bundle: $out already exists" >&2; exit 1; }
scratch="$(mktemp -d /tmp/flow-tutorial.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/home"
start=$(date +%s%N)
if ! (cd "$scratch" && HOME="$scratch/home" "$flow" tutorial --out "$scratch/out" \
        --name "$name" --no-receipt >"$scratch/tutorial.log" 2>&1); then
    cat "$scratch/tutorial.log" >&2
    echo "make-tutorial-bundle: tutorial failed" >&2
    exit 1
fi
if [ "$bind" = 1 ]; then
    "$(dirname "$flow")/python" - "$scratch/out/bundle" <<'PY'
import sys
from openadapt_flow.ir import Workflow
from openadapt_flow.runtime.effects.effect import ValueExpr

bundle = sys.argv[1]
wf = Workflow.load(bundle)
param_of = {str(v): k for k, v in (wf.params or {}).items()}
bound = 0
for step in wf.steps:
    for eff in step.effects or []:
        kind = getattr(eff.kind, "value", eff.kind)
        lit = getattr(eff.value, "literal", None)
        if kind == "field_equals" and lit in param_of:
            eff.value = ValueExpr(param=param_of[lit])
            bound += 1
if not bound:
    sys.exit("make-tutorial-bundle: no record check to bind")
wf.save(bundle)  # re-seals manifest.json and the embedded manifest
print(f"make-tutorial-bundle: bound {bound} record check(s) to parameters", file=sys.stderr)
PY
fi
mkdir -p "$(dirname "$out")"
cp -a "$scratch/out/bundle" "$out"
echo "make-tutorial-bundle: $out in $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
