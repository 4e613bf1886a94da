#!/usr/bin/env bash
# One call on the GPU machine (H200 host, 16 cores): build, test, and time the CPU workloads side by side with
# PyTorch. Results land in $OUT (the device tool brings them back). Usage: bash bench/run_h200.sh [part]
#   part 1: build + tests + sinter's benches; part 2: bench/vs_torch.py against part 1's JSON (needs part 1's file
#   copied into bench/results first, or run both in one call when time allows).
set -u
OUT=${OUT:-/tmp/sinter-out}
mkdir -p "$OUT"
PART=${1:-1}
THREADS=${THREADS:-16}
HOST=h200-16core
DATE=$(date +%Y-%m-%d)
if [ "$PART" = 1 ]; then
  { nproc; lscpu | grep -E 'Model name|Flags' | cut -c1-300; } > "$OUT/machine.txt"
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > "$OUT/cmake.log" 2>&1
  time ninja -C build-h200 -j16 sinter_cli > "$OUT/build_cli.log" 2>&1 || { tail -50 "$OUT/build_cli.log"; exit 1; }
  export SINTER_CACHE_DIR=$(mktemp -d)
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT/sinter-cpu-$HOST-$DATE.json" \
    > "$OUT/bench_cpu.log" 2>&1
  tail -25 "$OUT/bench_cpu.log"
  build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT/eager-cpu-$HOST-$DATE.json" \
    > "$OUT/bench_eager.log" 2>&1
  build-h200/sinter bench --suite overhead --json "$OUT/overhead-cpu-$HOST-$DATE.json" > "$OUT/bench_overhead.log" 2>&1
  tail -5 "$OUT/bench_eager.log" "$OUT/bench_overhead.log"
  time ninja -C build-h200 -j16 sinter_tests > "$OUT/build_tests.log" 2>&1 || tail -30 "$OUT/build_tests.log"
  SINTER_CACHE_DIR=$(mktemp -d) timeout 300 build-h200/sinter_tests --gtest_brief=1 > "$OUT/tests.log" 2>&1
  grep -E '^\[  FAILED|PASSED|SKIPPED|ran\.' "$OUT/tests.log" | tail -20
elif [ "$PART" = 4 ]; then
  # Part 4 (the final check of a session): build everything, run the tests, then part 2's side-by-side run.
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
  ninja -C build-h200 -j16 sinter_cli sinter_tests > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
  SINTER_CACHE_DIR=$(mktemp -d) timeout 300 build-h200/sinter_tests --gtest_brief=1 2>&1 | grep -v '^\[ measure' \
    | grep -E '^\[  FAILED|PASSED|SKIPPED|ran\.|Failure' | tail -20 > "$OUT/tests.txt"
  cat "$OUT/tests.txt"
  export SINTER_CACHE_DIR=$(mktemp -d)
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT/sinter-cpu-$HOST-$DATE.json" \
    > "$OUT/bench_cpu.log" 2>&1
  timeout ${TORCH_TIMEOUT:-300} python3 bench/vs_torch.py --threads "$THREADS" --sinter "$OUT/sinter-cpu-$HOST-$DATE.json" \
    --no-probe --json "$OUT/torch-cpu-$HOST-$DATE.json" > "$OUT/vs_torch.log" 2>&1
  tail -28 "$OUT/vs_torch.log"; grep vectorised "$OUT/bench_cpu.log"
elif [ "$PART" = 5 ]; then
  # Part 5: part 4 plus sinter's own GEMM against OpenBLAS (bench/sgemm_probe.cpp, with variants of its tiling
  # constants), a per-kernel profile of the slowest workloads (SINTER_LOGS=profile) and the eager suite with and
  # without streaming stores. Eight files come back.
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
  ninja -C build-h200 -j16 sinter_cli sinter_tests > "$OUT/logs.txt" 2>&1 || { tail -50 "$OUT/logs.txt"; exit 1; }
  probe() {  # $1: label, rest: extra compiler flags (a variant compiles its own copy of src/ops/sgemm.cpp)
    local label=$1; shift
    g++ -O2 -std=c++20 -I src -I include bench/sgemm_probe.cpp "$@" -L build-h200 -lsinter -lopenblas -lfmt \
      -Wl,-rpath,$PWD/build-h200 -o /tmp/sgemm_probe && { echo "== $label"; /tmp/sgemm_probe "$THREADS"; }
  }
  { probe library; for v in ${SGEMM_VARIANTS:-}; do probe "$v" src/ops/sgemm.cpp -D${v//,/ -D}; done; } \
    > "$OUT/sgemm_probe.txt" 2>&1
  grep -v '^ ' "$OUT/sgemm_probe.txt"
  if [ -z "${QUICK:-}" ]; then  # QUICK=1: no tests and no eager suite (a tuning run)
    SINTER_CACHE_DIR=$(mktemp -d) timeout 300 build-h200/sinter_tests --gtest_brief=1 2>&1 | grep -v '^\[ measure' \
      | grep -E '^\[  FAILED|PASSED|SKIPPED|ran\.|Failure' | tail -20 > "$OUT/tests.txt"
    cat "$OUT/tests.txt"
  fi
  export SINTER_CACHE_DIR=$(mktemp -d)
  for w in gpt_block resnet_block mlp; do
    SINTER_LOGS=profile build-h200/sinter bench --device cpu --threads "$THREADS" --only $w --backends inductor 2>&1 \
      | grep -v '^\[sinter:profile\] [0-9] calls' | grep -A12 'calls,' | grep -v '^$'
  done > "$OUT/profile.txt" 2>&1
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT/sinter-cpu-$HOST-$DATE.json" \
    >> "$OUT/logs.txt" 2>&1
  timeout ${TORCH_TIMEOUT:-300} python3 bench/vs_torch.py --threads "$THREADS" --sinter "$OUT/sinter-cpu-$HOST-$DATE.json" \
    --no-probe --json "$OUT/torch-cpu-$HOST-$DATE.json" > "$OUT/vs_torch.txt" 2>&1
  tail -28 "$OUT/vs_torch.txt"
  [ -n "${QUICK:-}" ] && exit 0
  build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT/eager-cpu-$HOST-$DATE.json" >> "$OUT/logs.txt" 2>&1
  echo "== eager suite with SINTER_STREAM_STORES=0" >> "$OUT/logs.txt"
  SINTER_STREAM_STORES=0 build-h200/sinter bench --suite eager --threads "$THREADS" >> "$OUT/logs.txt" 2>&1
  grep -E 'ceiling|% of|^==' "$OUT/logs.txt" | tail -44
elif [ "$PART" = 6 ]; then
  # Part 6 (a GEMM tuning run): PyTorch's GEMM and sinter's planned and best-found configurations on the same
  # shapes (bench/torch_mm.py, bench/sgemm_probe.cpp --sweep), then part 5's profile and side-by-side run.
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
  ninja -C build-h200 -j16 sinter_cli > "$OUT/logs.txt" 2>&1 || { tail -50 "$OUT/logs.txt"; exit 1; }
  g++ -O2 -std=c++20 -I src -I include bench/sgemm_probe.cpp -L build-h200 -lsinter -lopenblas -lfmt \
    -Wl,-rpath,$PWD/build-h200 -o /tmp/sgemm_probe || exit 1
  { python3 bench/torch_mm.py "$THREADS"; /tmp/sgemm_probe "$THREADS" --sweep; python3 bench/torch_mm.py "$THREADS"; } \
    > "$OUT/sgemm_sweep.txt" 2>&1
  grep -E 'torch |planned|best' "$OUT/sgemm_sweep.txt" | grep -v 'stage 1'
  export SINTER_CACHE_DIR=$(mktemp -d)
  for w in gpt_block resnet_block mlp naive_attention; do
    SINTER_LOGS=profile build-h200/sinter bench --device cpu --threads "$THREADS" --only $w --backends inductor 2>&1 \
      | grep -v '^\[sinter:profile\] [0-9] calls' | grep -A12 'calls,' | grep -v '^$'
  done > "$OUT/profile.txt" 2>&1
  [ -n "${NO_TORCH:-}" ] && exit 0
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT/sinter-cpu-$HOST-$DATE.json" \
    >> "$OUT/logs.txt" 2>&1
  timeout ${TORCH_TIMEOUT:-300} python3 bench/vs_torch.py --threads "$THREADS" --sinter "$OUT/sinter-cpu-$HOST-$DATE.json" \
    --no-probe --json "$OUT/torch-cpu-$HOST-$DATE.json" > "$OUT/vs_torch.txt" 2>&1
  tail -28 "$OUT/vs_torch.txt"
elif [ "$PART" = 7 ]; then
  # Part 7 (a session's check): build, tests, GEMM probe beside PyTorch's GEMM, per-kernel profiles, the
  # side-by-side workloads, and the eager suite in both of vec_math's division forms.
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
  ninja -C build-h200 -j16 sinter_cli sinter_tests > "$OUT/logs.txt" 2>&1 || { tail -50 "$OUT/logs.txt"; exit 1; }
  SINTER_CACHE_DIR=$(mktemp -d) timeout 300 build-h200/sinter_tests --gtest_brief=1 2>&1 | grep -v '^\[ measure' \
    | grep -E '^\[  FAILED|PASSED|SKIPPED|ran\.|Failure' | tail -20 > "$OUT/tests.txt"
  cat "$OUT/tests.txt"
  g++ -O2 -std=c++20 -I src -I include bench/sgemm_probe.cpp -L build-h200 -lsinter -lopenblas -lfmt \
    -Wl,-rpath,$PWD/build-h200 -o /tmp/sgemm_probe && /tmp/sgemm_probe "$THREADS" > "$OUT/sgemm_probe.txt" 2>&1
  python3 bench/torch_mm.py "$THREADS" >> "$OUT/sgemm_probe.txt" 2>&1
  grep -E 'planned|torch ' "$OUT/sgemm_probe.txt" | cut -c1-200
  export SINTER_CACHE_DIR=$(mktemp -d)
  for w in gpt_block resnet_block mlp naive_attention; do
    SINTER_LOGS=profile build-h200/sinter bench --device cpu --threads "$THREADS" --only $w --backends inductor 2>&1 \
      | grep -v '^\[sinter:profile\] [0-9] calls' | grep -A12 'calls,' | grep -v '^$'
  done > "$OUT/profile.txt" 2>&1
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT/sinter-cpu-$HOST-$DATE.json" \
    >> "$OUT/logs.txt" 2>&1
  timeout ${TORCH_TIMEOUT:-300} python3 bench/vs_torch.py --threads "$THREADS" --sinter "$OUT/sinter-cpu-$HOST-$DATE.json" \
    --no-probe --json "$OUT/torch-cpu-$HOST-$DATE.json" > "$OUT/vs_torch.txt" 2>&1
  tail -28 "$OUT/vs_torch.txt"
  build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT/eager-cpu-$HOST-$DATE.json" > "$OUT/eager.txt" 2>&1
  for d in ${DIVISIONS:-divide}; do
    echo "== eager suite with SINTER_VEC_DIVISION=$d" >> "$OUT/eager.txt"
    SINTER_VEC_DIVISION=$d build-h200/sinter bench --suite eager --threads "$THREADS" >> "$OUT/eager.txt" 2>&1
  done
  grep -E 'ceiling|% of|^==' "$OUT/eager.txt" | tail -50
elif [ "$PART" = 3 ]; then
  # Part 3: does OpenBLAS's spinning after a threaded GEMM slow the kernels that follow? (OPENBLAS_THREAD_TIMEOUT
  # is read when the library loads: 2^n spin loops before its threads sleep; default 28.)
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
  ninja -C build-h200 -j16 sinter_cli > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
  export SINTER_CACHE_DIR=$(mktemp -d)
  for w in gpt_block mlp resnet_block naive_attention; do
    for t in default 4; do
      if [ $t = default ]; then env -u OPENBLAS_THREAD_TIMEOUT build-h200/sinter bench --device cpu --threads "$THREADS" \
        --only $w --backends inductor 2>&1 | grep "^$w" | sed "s/^/timeout=$t /"
      else OPENBLAS_THREAD_TIMEOUT=$t build-h200/sinter bench --device cpu --threads "$THREADS" --only $w \
        --backends inductor 2>&1 | grep "^$w" | sed "s/^/timeout=$t /"; fi
    done
  done | tee "$OUT/openblas_timeout.txt"
else
  # Part 2: sinter's workloads and PyTorch's, side by side in one call (at most 8 files come back).
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
  ninja -C build-h200 -j16 sinter_cli > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
  g++ -O2 -std=c++20 -I src -I include bench/sgemm_probe.cpp -L build-h200 -lsinter -lopenblas -lfmt \
    -Wl,-rpath,$PWD/build-h200 -o /tmp/sgemm_probe && /tmp/sgemm_probe "$THREADS" > "$OUT/gemm_probe.txt" 2>&1
  export SINTER_CACHE_DIR=$(mktemp -d)
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT/sinter-cpu-$HOST-$DATE.json" \
    > "$OUT/bench_cpu.log" 2>&1
  timeout ${TORCH_TIMEOUT:-330} python3 bench/vs_torch.py --threads "$THREADS" --sinter "$OUT/sinter-cpu-$HOST-$DATE.json" \
    --no-probe --json "$OUT/torch-cpu-$HOST-$DATE.json" > "$OUT/vs_torch.log" 2>&1
  tail -30 "$OUT/vs_torch.log"; head -30 "$OUT/gemm_probe.txt"
fi
