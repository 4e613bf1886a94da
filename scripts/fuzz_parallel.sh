#!/usr/bin/env bash
# Runs sinter fuzz on many seeds at once (one process per seed) on a many-core host: builds sinter_cli, fuzzes
# each seed for SECONDS, and leaves in OUTDIR a summary of every seed (summary.txt) and the findings of all of
# them in one archive (findings.tar.gz). Usage:
#   bash scripts/fuzz_parallel.sh OUTDIR [FIRST_SEED] [SEEDS] [SECONDS]     (defaults: 101, 14, 300)
# The kinds make test ignores (FUZZ_IGNORED in the Makefile) are ignored here too.
set -u
OUT_DIR=${1:?usage: scripts/fuzz_parallel.sh OUTDIR [FIRST_SEED] [SEEDS] [SECONDS]}
FIRST=${2:-101}
SEEDS=${3:-14}
SECONDS_EACH=${4:-300}
BUILD=${BUILD:-build-fuzz}
IGNORED=$(sed -n 's/^FUZZ_IGNORED ?= //p' Makefile)
mkdir -p "$OUT_DIR"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
ninja -C "$BUILD" -j"$(nproc)" sinter_cli > "$OUT_DIR/build.log" 2>&1 || { tail -40 "$OUT_DIR/build.log"; exit 1; }
work=$(mktemp -d)
for s in $(seq "$FIRST" $((FIRST + SEEDS - 1))); do
  SINTER_CACHE_DIR="$work/cache$s" "$BUILD/sinter" fuzz --seed "$s" --seconds "$SECONDS_EACH" --out "$work/findings" \
    --ignore "$IGNORED" > "$work/seed$s.log" 2>&1 &
done
wait
for s in $(seq "$FIRST" $((FIRST + SEEDS - 1))); do
  sed -n '/summary:/,$p' "$work/seed$s.log"
done > "$OUT_DIR/summary.txt"
tar -czf "$OUT_DIR/findings.tar.gz" -C "$work" findings 2> /dev/null || true
grep -h "summary:" "$OUT_DIR/summary.txt"
grep -c "^  [0-9]*\." "$OUT_DIR/summary.txt" | sed 's/^/findings: /'
