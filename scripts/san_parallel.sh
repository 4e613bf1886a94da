#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer on a many-core host (what `make test SAN=1`
# runs, split into one gtest shard per core): builds build-san/ and leaves in OUTDIR each shard's log and a summary
# (summary.txt: per shard the tests run, failed and any sanitizer report). Usage:
#   bash scripts/san_parallel.sh OUTDIR [SHARDS]       (default: one shard per core)
set -u
OUT_DIR=${1:?usage: scripts/san_parallel.sh OUTDIR [SHARDS]}
SHARDS=${2:-$(nproc)}
BUILD=${BUILD:-build-san}
mkdir -p "$OUT_DIR"
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_SAN=ON -DSINTER_CCACHE=OFF > /dev/null 2>&1
ninja -C "$BUILD" -j"$(nproc)" sinter_tests > "$OUT_DIR/build.log" 2>&1 || { tail -40 "$OUT_DIR/build.log"; exit 1; }
echo "build took $(( $(date +%s) - start )) s"
start=$(date +%s)
work=$(mktemp -d)
for i in $(seq 0 $((SHARDS - 1))); do
  GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i SINTER_CACHE_DIR="$work/cache$i" \
    "$BUILD/sinter_tests" --gtest_brief=1 > "$work/shard$i.log" 2>&1 &
done
wait
echo "tests took $(( $(date +%s) - start )) s"
for i in $(seq 0 $((SHARDS - 1))); do
  log="$work/shard$i.log"
  echo "shard $i: $(grep -c '^\[       OK \]\|^\[  PASSED  \]' "$log") ok lines, $(grep -c '^\[  FAILED  \]' "$log") failed lines," \
    "$(grep -c 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer' "$log") sanitizer reports"
  grep -h '^\[  FAILED  \]\|ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer\|PASSED' "$log" | head -20
done > "$OUT_DIR/summary.txt"
tar -czf "$OUT_DIR/logs.tar.gz" -C "$work" $(cd "$work" && ls shard*.log)
cat "$OUT_DIR/summary.txt" | grep -v '^\[  PASSED' | head -60
