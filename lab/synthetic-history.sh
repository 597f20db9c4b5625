#!/usr/bin/env bash
# A synthetic history of main's runs for `oemputx history` (docs/gate.md shows its output):
# one real run of the embedded queue manager appended with --save-baseline, copied RUNS
# times with each run's group figures set to a lognormal draw of coefficient of variation
# CV (seeded: the same file every time), the flow's group times 1 + STEP from run AT on,
# each copy with its own commit and start. Then `oemputx history` on it.
#
#   bash lab/synthetic-history.sh [AT] [STEP] [CV] [RUNS]   (defaults: 15 0.10 0.025 30)
#
# OEMPUTX names the binary (default target/release/oemputx, built if missing). Writes
# $LAB_OUT/synthetic-history-<date>/history.json (target/lab by default).
set -euo pipefail
cd "$(dirname "$0")/.."
at=${1:-15} step=${2:-0.10} cv=${3:-0.025} runs=${4:-30}
bin=${OEMPUTX:-target/release/oemputx}
[ -x "$bin" ] || cargo build --quiet --release --bin oemputx
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
out=${LAB_OUT:-target/lab}/synthetic-history-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
(cd "$out" && OEMPUTX_NO_SAVE=1 GITHUB_SHA=0000000000000000000000000000000000000000 \
  "$bin" --count 1000 --rounds 3 --quiet --save-baseline one.json)
python3 - "$out" "$at" "$step" "$cv" "$runs" <<'PY'
import copy, hashlib, json, math, random, sys
out, at, step, cv, runs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
template = json.load(open(f"{out}/one.json"))["runs"][0]
rng = random.Random(44)
sigma = math.sqrt(math.log(1 + cv * cv))
history = []
for i in range(runs):
    run = copy.deepcopy(template)
    # One draw a run and group: the rounds of a run share its level, as on a real machine.
    level = {g["name"]: math.exp(sigma * rng.gauss(0, 1)) for g in run["groups"]}
    for r in run["rounds"]:
        for g in r["groups"]:
            base = 50.0 if g["name"] != "DRIVER" else 40.0
            up = 1 + step if g["name"] != "DRIVER" and i >= at else 1.0
            g["total_us_per_tran"] = base * up * level[g["name"]]
        total = sum(g["total_us_per_tran"] for g in r["groups"])
        r["captured_us_per_tran"] = r["corrected_us_per_tran"] = total
    run["start_utc"] = f"2026-11-{i + 1:02d}T06:00:00.000000Z"
    run["commit"] = hashlib.sha1(f"commit {i}".encode()).hexdigest()
    run["saved_utc"] = f"2026-11-{i + 1:02d}T06:05:00Z"
    history.append(run)
json.dump({"schema": "oemputx.history/1", "runs": history}, open(f"{out}/history.json", "w"), indent=1)
PY
cd "$out" && "$bin" history history.json --metric DRIVER --export-json change-points.json --export-html change-points.html
