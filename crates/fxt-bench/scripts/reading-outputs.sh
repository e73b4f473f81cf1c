#!/bin/sh
# Captures what every reading command prints for each trace given, so that
# a change to the decoder or the commands can be shown to leave outputs
# byte-identical: run it with the fxt built before the change and after,
# into two folders, then `diff -r BEFORE AFTER`.
#
#   crates/fxt-bench/scripts/reading-outputs.sh FXT OUTDIR TRACE...
#
# Per trace it keeps stdout, stderr and exit status of stats, stats --json,
# check, check --perfetto, flame --folded, dump, dump --offsets --payloads,
# dump --no-join, json, and the sha256 of every file export parquet writes
# (outputs over 1 MB are kept as their sha256 too).
set -u
fxt=$1; out=$2; shift 2
mkdir -p "$out"
keep() { # NAME FILE: the file itself if small, else its digest
    if [ "$(wc -c < "$2")" -gt 1048576 ]; then
        sha256sum < "$2" > "$out/$1.sha256"; rm -f "$2"
    else
        mv "$2" "$out/$1"
    fi
}
run() { # NAME ARGS...: one command's stdout, stderr and status
    name=$1; shift
    "$fxt" "$@" > "$out/$name.tmp" 2> "$out/$name.err.tmp"
    echo $? > "$out/$name.status"
    # Progress bars aside, stderr names the file; keep it by its base name.
    keep "$name.out" "$out/$name.tmp"
    keep "$name.err" "$out/$name.err.tmp"
}
for trace in "$@"; do
    t=$(basename "$trace")
    run "$t.stats" stats "$trace"
    run "$t.stats-json" stats --json "$trace"
    run "$t.check" check "$trace"
    run "$t.check-perfetto" check --perfetto "$trace"
    run "$t.flame" flame --folded "$trace"
    run "$t.dump" dump "$trace"
    run "$t.dump-all" dump --offsets --payloads "$trace"
    run "$t.dump-nojoin" dump --no-join "$trace"
    run "$t.json" json "$trace"
    # One scratch path, so that the summary naming it compares.
    rm -rf "$out.tables"
    run "$t.export" export parquet "$trace" -o "$out.tables" --host golden
    sed -i "s|$out.tables|TABLES|g" "$out/$t.export.err" 2>/dev/null
    (cd "$out.tables" 2>/dev/null && find . -type f | sort | xargs -r sha256sum) > "$out/$t.export.files"
    rm -rf "$out.tables"
done
