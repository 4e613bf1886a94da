#!/usr/bin/env bash
# Runs on the GPU machine (the H200 host, 16 cores): build, test, and time the CPU workloads side by side with
# PyTorch. Results land in OUTDIR, the first argument (at most 8 files a part). Usage:
#   bash bench/run_h200.sh OUTDIR [part]      (bench/README.md says what each part runs; part 1 by default)
# The GPU machine's copy of the tree may carry a stale .git: set SINTER_COMMIT=<hash> to the commit measured.
set -u
OUT_DIR=${1:?usage: bench/run_h200.sh OUTDIR [part]}
mkdir -p "$OUT_DIR"
PART=${2:-1}
THREADS=${THREADS:-16}
HOST=h200-16core
DATE=$(date +%Y-%m-%d)

build() {  # $1: log file, rest: ninja targets
  local log=$1; shift
  cmake -S . -B build-h200 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > /dev/null 2>&1
  ninja -C build-h200 -j16 "$@" > "$log" 2>&1 || { tail -50 "$log"; exit 1; }
}
run_tests() {  # the whole suite, its summary in tests.txt
  SINTER_CACHE_DIR=$(mktemp -d) timeout 300 build-h200/sinter_tests --gtest_brief=1 2>&1 | grep -v '^\[ measure' \
    | grep -E '^\[  FAILED|PASSED|SKIPPED|ran\.|Failure' | tail -20 > "$OUT_DIR/tests.txt"
  cat "$OUT_DIR/tests.txt"
}
build_probe() {  # bench/sgemm_probe.cpp against the library; extra arguments: compiler flags and sources
  g++ -O2 -std=c++20 -I src -I include bench/sgemm_probe.cpp "$@" -L build-h200 -lsinter -lopenblas -lfmt \
    -Wl,-rpath,$PWD/build-h200 -o /tmp/sgemm_probe
}
profiles() {  # SINTER_LOGS=profile of the named workloads, compiled, into profile.txt
  for w in "$@"; do
    SINTER_LOGS=profile build-h200/sinter bench --device cpu --threads "$THREADS" --only $w --backends inductor 2>&1 \
      | grep -v '^\[sinter:profile\] [0-9] calls' | grep -A12 'calls,' | grep -v '^$'
  done > "$OUT_DIR/profile.txt" 2>&1
}
compare() {  # $1: log of sinter's run; the workloads under sinter, then PyTorch's beside them (vs_torch.txt)
  export SINTER_CACHE_DIR=$(mktemp -d)
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT_DIR/sinter-cpu-$HOST-$DATE.json" >> "$1" 2>&1
  timeout ${TORCH_TIMEOUT:-300} python3 bench/vs_torch.py --threads "$THREADS" --sinter "$OUT_DIR/sinter-cpu-$HOST-$DATE.json" \
    --no-probe --json "$OUT_DIR/torch-cpu-$HOST-$DATE.json" > "$OUT_DIR/vs_torch.txt" 2>&1
  tail -28 "$OUT_DIR/vs_torch.txt"
}

case "$PART" in
1)  # build, sinter's three benches, the tests
  { nproc; lscpu | grep -E 'Model name|Flags' | cut -c1-300; } > "$OUT_DIR/machine.txt"
  build "$OUT_DIR/build.log" sinter_cli sinter_tests
  export SINTER_CACHE_DIR=$(mktemp -d)
  build-h200/sinter bench --device cpu --threads "$THREADS" --json "$OUT_DIR/sinter-cpu-$HOST-$DATE.json" \
    > "$OUT_DIR/bench_cpu.log" 2>&1
  tail -25 "$OUT_DIR/bench_cpu.log"
  build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT_DIR/eager-cpu-$HOST-$DATE.json" \
    > "$OUT_DIR/bench_eager.log" 2>&1
  build-h200/sinter bench --suite overhead --json "$OUT_DIR/overhead-cpu-$HOST-$DATE.json" > "$OUT_DIR/bench_overhead.log" 2>&1
  tail -5 "$OUT_DIR/bench_eager.log" "$OUT_DIR/bench_overhead.log"
  run_tests ;;
2)  # the GEMM probe, then sinter's workloads and PyTorch's side by side
  build "$OUT_DIR/build.log" sinter_cli
  build_probe && /tmp/sgemm_probe "$THREADS" > "$OUT_DIR/gemm_probe.txt" 2>&1
  compare "$OUT_DIR/bench_cpu.log"; head -30 "$OUT_DIR/gemm_probe.txt" ;;
3)  # does OpenBLAS's spinning after a threaded GEMM slow the kernels that follow? (OPENBLAS_THREAD_TIMEOUT is read
    # when the library loads: 2^n spin loops before its threads sleep; default 28)
  build "$OUT_DIR/build.log" sinter_cli
  export SINTER_CACHE_DIR=$(mktemp -d)
  for w in gpt_block mlp resnet_block naive_attention; do
    for t in default 4; do
      if [ $t = default ]; then env -u OPENBLAS_THREAD_TIMEOUT build-h200/sinter bench --device cpu --threads "$THREADS" \
        --only $w --backends inductor 2>&1 | grep "^$w" | sed "s/^/timeout=$t /"
      else OPENBLAS_THREAD_TIMEOUT=$t build-h200/sinter bench --device cpu --threads "$THREADS" --only $w \
        --backends inductor 2>&1 | grep "^$w" | sed "s/^/timeout=$t /"; fi
    done
  done | tee "$OUT_DIR/openblas_timeout.txt" ;;
4)  # the tests, then part 2's side-by-side run
  build "$OUT_DIR/build.log" sinter_cli sinter_tests
  run_tests
  compare "$OUT_DIR/bench_cpu.log" ;;
5)  # part 4 plus the GEMM probe with variants of its tiling constants (SGEMM_VARIANTS: a variant compiles its own
    # copy of src/ops/sgemm.cpp), profiles, and the eager suite with and without streaming stores (QUICK=1: no tests,
    # no eager suite)
  build "$OUT_DIR/logs.txt" sinter_cli sinter_tests
  probe() {  # $1: label, rest: extra compiler flags
    local label=$1; shift
    build_probe "$@" && { echo "== $label"; /tmp/sgemm_probe "$THREADS"; }
  }
  { probe library; for v in ${SGEMM_VARIANTS:-}; do probe "$v" src/ops/sgemm.cpp -D${v//,/ -D}; done; } \
    > "$OUT_DIR/sgemm_probe.txt" 2>&1
  grep -v '^ ' "$OUT_DIR/sgemm_probe.txt"
  [ -z "${QUICK:-}" ] && run_tests
  profiles gpt_block resnet_block mlp
  compare "$OUT_DIR/logs.txt"
  [ -n "${QUICK:-}" ] && exit 0
  build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT_DIR/eager-cpu-$HOST-$DATE.json" >> "$OUT_DIR/logs.txt" 2>&1
  echo "== eager suite with SINTER_STREAM_STORES=0" >> "$OUT_DIR/logs.txt"
  SINTER_STREAM_STORES=0 build-h200/sinter bench --suite eager --threads "$THREADS" >> "$OUT_DIR/logs.txt" 2>&1
  grep -E 'ceiling|% of|^==' "$OUT_DIR/logs.txt" | tail -44 ;;
6)  # a GEMM tuning run: PyTorch's GEMM and sinter's planned and best-found configurations on the same shapes, then
    # profiles and (unless NO_TORCH=1) the side-by-side run
  build "$OUT_DIR/logs.txt" sinter_cli
  build_probe || exit 1
  { python3 bench/torch_mm.py "$THREADS"; /tmp/sgemm_probe "$THREADS" --sweep; python3 bench/torch_mm.py "$THREADS"; } \
    > "$OUT_DIR/sgemm_sweep.txt" 2>&1
  grep -E 'torch |planned|best' "$OUT_DIR/sgemm_sweep.txt" | grep -v 'stage 1'
  profiles gpt_block resnet_block mlp naive_attention
  [ -n "${NO_TORCH:-}" ] && exit 0
  compare "$OUT_DIR/logs.txt" ;;
7)  # the full check: tests, the GEMM probe beside PyTorch's GEMM, profiles, the side-by-side run, and the eager
    # suite in both of vec_math's division forms (DIVISIONS: the forms to add to the default)
  build "$OUT_DIR/logs.txt" sinter_cli sinter_tests
  run_tests
  build_probe && /tmp/sgemm_probe "$THREADS" > "$OUT_DIR/sgemm_probe.txt" 2>&1
  python3 bench/torch_mm.py "$THREADS" >> "$OUT_DIR/sgemm_probe.txt" 2>&1
  grep -E 'planned|torch ' "$OUT_DIR/sgemm_probe.txt" | cut -c1-200
  profiles gpt_block resnet_block mlp naive_attention
  compare "$OUT_DIR/logs.txt"
  build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT_DIR/eager-cpu-$HOST-$DATE.json" > "$OUT_DIR/eager.txt" 2>&1
  for d in ${DIVISIONS:-divide}; do
    echo "== eager suite with SINTER_VEC_DIVISION=$d" >> "$OUT_DIR/eager.txt"
    SINTER_VEC_DIVISION=$d build-h200/sinter bench --suite eager --threads "$THREADS" >> "$OUT_DIR/eager.txt" 2>&1
  done
  grep -E 'ceiling|% of|^==' "$OUT_DIR/eager.txt" | tail -50 ;;
8)  # bench/rowpass_probe.cpp (standalone, no library build): prefetch schedules for softmax, layer_norm and
    # sigmoid beside a streaming copy, twice (ROUNDS), with the machine's THP setting
  { lscpu | grep -E 'Model name|NUMA|L1d|L2|L3'; cat /sys/kernel/mm/transparent_hugepage/enabled; } > "$OUT_DIR/rowpass.txt"
  g++ -O2 -std=c++20 -march=native -fopenmp -I src bench/rowpass_probe.cpp -o /tmp/rowpass_probe || exit 1
  for i in $(seq ${ROUNDS:-2}); do /tmp/rowpass_probe "$THREADS" "${FILTER:-}" >> "$OUT_DIR/rowpass.txt" 2>&1; done
  cat "$OUT_DIR/rowpass.txt" ;;
9)  # build, the tests, then the eager suite under each environment of VARIANTS (';'-separated, each a list of
    # VAR=value, or - for none), ROUNDS times over; the JSON is the last one's
  build "$OUT_DIR/logs.txt" sinter_cli sinter_tests
  run_tests
  IFS=';' read -ra variants <<< "${VARIANTS:-}"
  [ ${#variants[@]} -eq 0 ] && variants=("-")
  for i in $(seq ${ROUNDS:-1}); do
    for v in "${variants[@]}"; do
      [ "$v" = "-" ] && v=""
      echo "== eager suite, round $i, env: ${v:-default}" >> "$OUT_DIR/eager.txt"
      env $v build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT_DIR/eager-cpu-$HOST-$DATE.json" \
        >> "$OUT_DIR/eager.txt" 2>&1
    done
  done
  grep -E '^==|copy_str|pointwise|reduction' "$OUT_DIR/eager.txt" ;;
10) # rowpass_probe against the library (its ops and row kernels beside the probe's) under each environment of
    # VARIANTS (as in 9), then the probe's kernels with the output at several distances from the input modulo
    # 4 KiB (SKEWS, in floats; empty for none)
  build "$OUT_DIR/logs.txt" sinter
  g++ -O2 -std=c++20 -march=native -fopenmp -DPROBE_SINTER -I src -I include bench/rowpass_probe.cpp -L build-h200 \
    -lsinter -lfmt -Wl,-rpath,$PWD/build-h200 -o /tmp/rowpass_probe || exit 1
  IFS=';' read -ra variants <<< "${VARIANTS:--}"
  for v in "${variants[@]}"; do
    [ "$v" = "-" ] && v=""
    echo "== env: ${v:-default}" >> "$OUT_DIR/rowpass.txt"
    env $v /tmp/rowpass_probe "$THREADS" "${FILTER:-sinter|probe|sigmoid, no|3-pass, next row over passes 012, T2}" \
      >> "$OUT_DIR/rowpass.txt" 2>&1
  done
  for s in ${SKEWS-0 16 48 1008}; do
    Y_SKEW=$s /tmp/rowpass_probe "$THREADS" "sigmoid, no|softmax 3-pass, next row over passes 012, T2" | tail -3 >> "$OUT_DIR/rowpass.txt" 2>&1
  done
  cat "$OUT_DIR/rowpass.txt" ;;
11) # build, the tests, the eager suite twice, the workloads beside PyTorch, and sinter's lines of rowpass_probe
  build "$OUT_DIR/logs.txt" sinter_cli sinter_tests
  run_tests
  for i in 1 2; do
    echo "== eager suite, round $i" >> "$OUT_DIR/eager.txt"
    build-h200/sinter bench --suite eager --threads "$THREADS" --json "$OUT_DIR/eager-cpu-$HOST-$DATE.json" >> "$OUT_DIR/eager.txt" 2>&1
  done
  grep -E '^==|copy_str|pointwise|reduction|gemm|conv' "$OUT_DIR/eager.txt"
  compare "$OUT_DIR/logs.txt"
  g++ -O2 -std=c++20 -march=native -fopenmp -DPROBE_SINTER -I src -I include bench/rowpass_probe.cpp -L build-h200 \
    -lsinter -lfmt -Wl,-rpath,$PWD/build-h200 -o /tmp/rowpass_probe && \
    /tmp/rowpass_probe "$THREADS" "sinter|probe|sigmoid, no|3-pass, next row over passes 012, T2" > "$OUT_DIR/rowpass.txt" 2>&1
  cat "$OUT_DIR/rowpass.txt" ;;
*) echo "unknown part $PART (1-11)"; exit 2 ;;
esac
