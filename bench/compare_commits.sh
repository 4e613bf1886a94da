#!/usr/bin/env bash
# sinter at two commits on one machine: builds the old source (a `git archive` tarball) and this checkout, then runs
# `sinter bench --device cpu` with each binary in turn (old, new, old, new, ...) ROUNDS times, so that load from
# other processes falls on both alike, and prints each workload's compiled time new / old (median over rounds;
# below 1: the new commit is faster). Usage:
#   git archive --format=tar OLD_COMMIT > old.tar
#   bash bench/compare_commits.sh OUTDIR old.tar [ROUNDS] [THREADS]
# OUTDIR receives compare.txt and the first round's JSON of each side (bench-old-1.json, bench-new-1.json); the
# later rounds' files and the logs stay in a temporary folder (kept when a bench fails).
set -u
OUT_DIR=${1:?usage: bench/compare_commits.sh OUTDIR OLD_TARBALL [ROUNDS] [THREADS]}
OLD_TAR=${2:?usage: bench/compare_commits.sh OUTDIR OLD_TARBALL [ROUNDS] [THREADS]}
ROUNDS=${3:-2}
THREADS=${4:-$(nproc)}
JOBS=$(nproc)
mkdir -p "$OUT_DIR"
OLD_SRC=$(mktemp -d)
tar -xf "$OLD_TAR" -C "$OLD_SRC" || exit 1

build() {  # $1 source dir, $2 build dir, $3 log
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > "$3" 2>&1 &&
    ninja -C "$2" -j"$JOBS" sinter_cli >> "$3" 2>&1 || { tail -30 "$3"; exit 1; }
}
build "$OLD_SRC" "$OLD_SRC/build" "$OLD_SRC/build-old.log"
build "$PWD" "$PWD/build-compare" "$OLD_SRC/build-new.log"

RUNS=$(mktemp -d)
for i in $(seq "$ROUNDS"); do
  for side in old new; do
    bin=$([ $side = old ] && echo "$OLD_SRC/build/sinter" || echo "$PWD/build-compare/sinter")
    SINTER_CACHE_DIR=$(mktemp -d) SINTER_COMMIT=$side "$bin" bench --device cpu --threads "$THREADS" --quick \
      --json "$RUNS/bench-$side-$i.json" > "$RUNS/bench-$side-$i.log" 2>&1 ||
      { echo "bench failed: $RUNS/bench-$side-$i.log"; tail -20 "$RUNS/bench-$side-$i.log"; }
  done
done
cp "$RUNS/bench-old-1.json" "$RUNS/bench-new-1.json" "$OUT_DIR/" 2>/dev/null

python3 - "$RUNS" "$ROUNDS" <<'PY' | tee "$OUT_DIR/compare.txt"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
times = {}
for side in ("old", "new"):
    for i in range(1, rounds + 1):
        try:
            results = json.load(open(f"{out}/bench-{side}-{i}.json"))["results"]
        except (OSError, ValueError, KeyError):
            continue
        for r in results:
            key = (r["workload"], r["backend"])
            times.setdefault(key, {"old": [], "new": []})[side].append(r["compiled_ms"])
print(f"{'workload':<18} {'backend':<10} {'old ms':>9} {'new ms':>9} {'new/old':>8}")
for (w, b), t in sorted(times.items()):
    if not t["old"] or not t["new"]:
        continue
    o, n = statistics.median(t["old"]), statistics.median(t["new"])
    print(f"{w:<18} {b:<10} {o:9.3f} {n:9.3f} {n / o:8.3f}")
PY
