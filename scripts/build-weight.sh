#!/usr/bin/env bash
# What a user's build pays for fxt (issue 42): the same ten-line program on
# fxt (default features, path dependency on this checkout) and on `tracing`
# + `tracing-subscriber` (fmt), each built cold in release one after the
# other in this run, with its own target folder. Prints, per program, the
# CPU seconds (user + system) of `cargo build --release`, the crates it
# compiles, the binary's size, and the ratios fxt / tracing; then the
# duplicated dependencies of the fxt program (`cargo tree -d`, which should
# be empty) and its normal dependency tree.
#
#   scripts/build-weight.sh              # both programs, cold
#   FEATURES=symbolize scripts/build-weight.sh   # fxt with a feature on
#   WRITE=1 scripts/build-weight.sh      # also rewrites the guide's table
#
# Downloads are fetched before the timed builds, so the figures are
# compilation only. The table of docs/guide/dependency.md ("What it costs
# to build") is this script's output (WRITE_README=1, its old name, works
# too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
features=${FEATURES:-}

mkdir -p "$work/fxt-user/src" "$work/tracing-user/src"
cat >"$work/fxt-user/Cargo.toml" <<EOF
[package]
name = "fxt-user"
version = "0.1.0"
edition = "2021"

[dependencies]
fxt = { path = "$root", features = [${features:+\"$features\"}] }

[workspace]
EOF
cat >"$work/fxt-user/src/main.rs" <<'EOF'
#[fxt::trace_duration]
fn work(n: u64) -> u64 {
    (0..n).sum()
}

fn main() {
    let session = fxt::start(fxt::Config::from_env()).expect("start tracing");
    fxt::trace_instant!("app", "started");
    println!("{}", work(1000));
    session.finish().expect("write the trace");
}
EOF
cat >"$work/tracing-user/Cargo.toml" <<'EOF'
[package]
name = "tracing-user"
version = "0.1.0"
edition = "2021"

[dependencies]
tracing = "0.1"
tracing-subscriber = "0.3"

[workspace]
EOF
cat >"$work/tracing-user/src/main.rs" <<'EOF'
#[tracing::instrument]
fn work(n: u64) -> u64 {
    (0..n).sum()
}

fn main() {
    tracing_subscriber::fmt::init();
    tracing::info!("started");
    println!("{}", work(1000));
}
EOF

# One cold build: prints "cpu_seconds crates bytes".
measure() {
    local dir=$1 bin=$2
    (cd "$dir" && cargo fetch -q)
    local out
    out=$( { TIMEFORMAT='%U %S'; time (cd "$dir" && CARGO_TARGET_DIR="$dir/target" \
        CARGO_INCREMENTAL=0 cargo build -q --release >/dev/null 2>&1); } 2>&1 )
    local cpu crates bytes
    cpu=$(awk '{ printf "%.1f", $1 + $2 }' <<<"$out")
    crates=$(find "$dir/target/release/deps" -maxdepth 1 \( -name '*.rlib' -o -name '*.so' \) | wc -l)
    bytes=$(stat -c %s "$dir/target/release/$bin")
    echo "$cpu $crates $bytes"
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) cores, load $load, $(rustc --version)"
read -r t_cpu t_crates t_bytes < <(measure "$work/tracing-user" tracing-user)
read -r f_cpu f_crates f_bytes < <(measure "$work/fxt-user" fxt-user)
table=$(
    echo "| the same program on | build CPU s | crates | binary |"
    echo "|---|---:|---:|---:|"
    printf '| fxt (default features%s) | %s | %s | %.2f MB |\n' "${features:+, $features}" \
        "$f_cpu" "$f_crates" "$(awk "BEGIN { print $f_bytes / 1e6 }")"
    printf '| `tracing` + `tracing-subscriber` (fmt) | %s | %s | %.2f MB |\n' \
        "$t_cpu" "$t_crates" "$(awk "BEGIN { print $t_bytes / 1e6 }")"
    printf '| ratio fxt / tracing | %.2fx | | %.2fx |\n' \
        "$(awk "BEGIN { print $f_cpu / $t_cpu }")" "$(awk "BEGIN { print $f_bytes / $t_bytes }")"
    printf '\n(%s cores, load %s at the start, %s)\n' "$(nproc)" "$load" "$(rustc --version | cut -d' ' -f1-2)"
)
echo
echo "$table"
if [ -n "${WRITE:-}${WRITE_README:-}" ]; then
    TABLE="$table" python3 - "$root/docs/guide/dependency.md" <<'PY'
import os, re, sys
path = sys.argv[1]
text = open(path).read()
begin, end = "<!-- build-weight: regenerate with scripts/build-weight.sh -->", "<!-- /build-weight -->"
i, j = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:i] + "\n" + os.environ["TABLE"] + "\n" + text[j:])
PY
    echo "docs/guide/dependency.md: table rewritten"
fi
echo
echo "duplicated dependencies of the fxt program (cargo tree -d):"
(cd "$work/fxt-user" && cargo tree -q -d -e normal 2>/dev/null | sed 's/^/    /')
echo "normal dependencies of the fxt program (cargo tree -e normal):"
(cd "$work/fxt-user" && cargo tree -q -e normal | sed 's/^/    /')
