#!/bin/sh
# A fast stand-in for `openadapt-flow run`, for bench/compare_production.py.
#
#   fast_fake_flow.sh REPORT_JSON run BUNDLE --run-dir D --params-file P [other flags ...]
#
# Both servers get it as `--flow-cli "/path/fast_fake_flow.sh /path/report.json"`. It checks
# that the params file is readable, creates D (0700, like Flow's evidence dir), copies
# REPORT_JSON (a consistent VERIFIED report) to D/report.json, prints a short admitted gate
# header like Flow's, and exits 0. Cost: one dash process plus mkdir and cp (two execs).
tpl=$1
[ "$2" = run ] || { echo "fast_fake_flow: only 'run' is supported" >&2; exit 64; }
shift 3
rd=
pf=
while [ $# -gt 0 ]; do
    case $1 in
        --run-dir) rd=$2; shift 2 ;;
        --params-file) pf=$2; shift 2 ;;
        *) shift ;;
    esac
done
[ -n "$rd" ] && [ -r "$pf" ] || { echo "fast_fake_flow: --run-dir and a readable --params-file are needed" >&2; exit 1; }
echo "ADMIT: workflow 'bench' under 'standard' profile vs policy 'clinical-write'"
echo "  -> ADMITTED: all fail-closed gates satisfied."
mkdir -p -m 700 "$rd" && cp "$tpl" "$rd/report.json" || exit 1
echo "Replay VERIFIED: $rd/REPORT.md"
exit 0
