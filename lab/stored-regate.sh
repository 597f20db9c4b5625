#!/usr/bin/env bash
# Judge a stored-gate calibration batch's saved runs again with another oemputx (the rule
# changed, the measurements did not): every <case>-<run>-report.json of each folder against
# its baseline.json, one line per run with the exit code and each metric's verdict.
#
#   bash lab/stored-regate.sh [--tolerance 5%] target/lab/stored-YYYYMMDD-HHMM ...
#   OEMPUTX (target/release/oemputx)
set -euo pipefail
bin=${OEMPUTX:-target/release/oemputx}
tolerance=5%
if [ "${1:-}" = --tolerance ]; then tolerance=$2; shift 2; fi
for dir in "$@"; do
  for report in "$dir"/*-*-report.json; do
    case $(basename "$report") in baseline-*) continue ;; esac
    name=$(basename "$report" -report.json)
    json=$(mktemp)
    code=0
    "$bin" gate --baseline "$dir/baseline.json" --current "$report" --tolerance "$tolerance" \
      --export-json "$json" >/dev/null 2>&1 || code=$?
    python3 - "$json" "$name" "$code" "$dir" <<'PY'
import json, sys
path, name, code, folder = sys.argv[1:]
try:
    j = json.load(open(path))
except (OSError, ValueError):
    print(f"{folder}\t{name}\texit {code}\tno verdict")
    sys.exit(0)
cells = " ".join(f"{d['metric']}={d['verdict']}({100 * (d['ratio'] - 1):+.1f}% lo {100 * (d['ci_low'] - 1):+.1f}%)" for d in j["decisions"])
print(f"{folder}\t{name}\texit {code}\t{j['verdict']}\t{cells}")
PY
    rm -f "$json"
  done
done
