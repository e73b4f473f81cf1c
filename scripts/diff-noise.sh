#!/usr/bin/env bash
# fxt diff's noise on real runs of examples/diff_demo.rs (docs/guide/compare.md):
#  - false alarms: PAIRS pairs of two sets of RUNS (5) unchanged runs, diffed at
#    --fail-above 10 (default 95% confidence): how many exit 1, and how
#    many call any name significant at all;
#  - slowdowns: for each fraction in SLOWDOWNS, K pairs of RUNS runs against RUNS
#    runs with `compact` slowed by it: how many the gate catches (exit 1
#    naming work/compact), how many find it significant, and how many name
#    another function.
# Each set's runs are taken one after the other, as CI jobs would take
# them; the machine's load at the time is part of the noise, so say what
# it was (printed at the start and end).
#
#   scripts/diff-noise.sh                    # PAIRS=40 K=10
#   PAIRS=10 K=4 scripts/diff-noise.sh       # quicker, coarser
#   RUNS=1 SLOWDOWNS= scripts/diff-noise.sh  # one run per side, false alarms only
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-40}
K=${K:-10}
SLOWDOWNS=${SLOWDOWNS-"0.05 0.10 0.15 0.20 0.25 0.35"}
RUNS=${RUNS:-5}

cargo build -q -p fxt-cli
cargo build -q --release --example diff_demo
fxt=target/debug/fxt
demo=target/release/examples/diff_demo
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

# runs SIDE SLOW: RUNS runs of the demo, compact slowed by SLOW, as SIDE-N.fxt.
runs() {
    rm -f "$dir/$1"-*.fxt
    for r in $(seq "$RUNS"); do
        FXT_OUTPUT="$dir/$1-$r.fxt" DIFF_DEMO_SLOW="$2" "$demo" >/dev/null
    done
}

# pair: diffs base-* against new-*; prints `EXIT REGRESSIONS SIGNIFICANT_GROWTHS`
# (names joined by commas, `-` for none).
pair() {
    local code=0
    "$fxt" diff --base "$dir"/base-*.fxt --new "$dir"/new-*.fxt \
        --fail-above 10 --json >"$dir/out.json" 2>/dev/null || code=$?
    python3 - "$dir/out.json" "$code" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
key = lambda n: n["category"] + "/" + n["name"]
reg = [key(n) for n in doc["names"] if n["regression"]]
sig = [key(n) for n in doc["names"] if n["significant"]]
print(sys.argv[2], ",".join(reg) or "-", ",".join(sig) or "-")
PY
}

alarms=0
flagged=0
for _ in $(seq "$PAIRS"); do
    runs base 0
    runs new 0
    read -r code reg sig < <(pair)
    [ "$code" = 1 ] && alarms=$((alarms + 1))
    [ "$sig" != - ] && flagged=$((flagged + 1))
    [ "$code" = 0 ] || [ "$code" = 1 ] || { echo "fxt diff exited $code" >&2; exit 1; }
done
echo "unchanged, $RUNS vs $RUNS runs, $PAIRS pairs: --fail-above 10 exited 1 in $alarms;" \
    "some name significant at 95% (any size) in $flagged"

for slow in $SLOWDOWNS; do
    caught=0
    significant=0
    others=0
    for _ in $(seq "$K"); do
        runs base 0
        runs new "$slow"
        read -r code reg sig < <(pair)
        [ "$code" = 1 ] && [[ ",$reg," == *",work/compact,"* ]] && caught=$((caught + 1))
        [[ ",$sig," == *",work/compact,"* ]] && significant=$((significant + 1))
        [[ "$reg" =~ (^|,)work/(parse|hash|render) ]] && others=$((others + 1))
    done
    echo "compact +$slow, $RUNS vs $RUNS runs, $K pairs: gate caught $caught, significant $significant," \
        "a neighbour flagged in $others"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); CPU seconds of this script and its children:"
times
