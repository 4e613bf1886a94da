#!/usr/bin/env bash
# The GPU check in one call, on a machine with an NVIDIA GPU (the H200 host: Ubuntu 24.04, g++ 13, CUDA 13,
# PyTorch in its python3): builds sinter, runs the CUDA tests on the GPU, compute-sanitizer over a few of them,
# ONNX's conformance suites with CUDA inputs, and `sinter bench --device cuda` beside `bench/vs_torch.py --device
# cuda` (PyTorch eager and torch.compile on the same definitions, one ratio table). Usage:
#   SINTER_COMMIT=<hash> bash bench/run_cuda.sh [OUTDIR] [PARTS]
# OUTDIR (default bench/results) gets the two bench JSONs, the conformance JSON, summary.txt and logs.tar.gz.
# PARTS: a comma list of build, tests, sanitizer, conformance, bench, train, profile, zoo, fuzz (default: the first
# six, in that order; train: `sinter bench --suite train --device cuda` beside `bench/vs_torch.py --train --device cuda`;
# profile: SINTER_LOGS=profile over the GPU workloads PROFILE names (default gpt_block,resnet_block), inference
# and training step, each kernel timed to the device's completion, then bench/torch_profile.py's kernels of
# torch.compile on the same definitions, into OUTDIR/profile-cuda-HOST-DATE.txt; zoo: the CPU model zoo
# `sinter bench --suite models` on all the host's cores against its python3's ONNX Runtime, MODELS the folder of
# the exported models (default .cache/models), ZOO_ONLY and ZOO_BATCHES (default 2) passed on; fuzz: `sinter
# fuzz` on one seed per core but one, FUZZ_SECONDS (default 240) each from FUZZ_SEED (default 801)).
# ONNX_DATA: the conformance data (default .cache/onnx-data, made by scripts/conformance_data.sh; on a machine
# without network, a copy with the links followed: cp -rL .cache/onnx-data DIR). NO_PROBE=1 skips torch.compile's
# cold/warm compile-time child processes. TORCH_MODES: a comma list of torch.compile modes for vs_torch.py (default
# "default"; e.g. default,max-autotune-no-cudagraphs,reduce-overhead), one JSON and one ratio table each, against
# sinter's counterpart mode. TESTS: the tests part's gtest filter (default every CUDA test, 'Cuda*:Nvrtc*').
# ONLY: one model for the train part. The machine's copy of the tree may carry a stale .git: pass the commit.
set -u
OUT_DIR=${1:-bench/results}
PARTS=${2:-build,tests,sanitizer,conformance,bench,train}
BUILD=${BUILD:-build-gpu}
DATE=$(date +%Y-%m-%d)
# HOST names the result files: the GPU's model (h100, h200, ...) unless given.
HOST=${HOST:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -oiE "[a-z][0-9]{2,3}" | head -1 | tr A-Z a-z)}
HOST=${HOST:-gpu}
COMMIT=${SINTER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export SINTER_COMMIT=$COMMIT
mkdir -p "$OUT_DIR"
LOGS=$(mktemp -d)
SUMMARY="$OUT_DIR/summary.txt"
say() { echo "$@" | tee -a "$SUMMARY"; }
has() { [[ ",$PARTS," == *",$1,"* ]]; }
export SINTER_CACHE_DIR=$(mktemp -d)
export SINTER_ONNX_DATA=${ONNX_DATA:-.cache/onnx-data}  # for the tests' CudaOnnxConformance too
unset SINTER_CUDA_SIM
# cuDNN (convolutions): the system's, else the one PyTorch's wheel brings (nvidia-cudnn), else none (the im2col path).
if [ -z "${SINTER_CUDNN:-}" ] && ! ldconfig -p 2>/dev/null | grep -q "libcudnn.so.9 "; then
  d=$(python3 -c "import os, nvidia.cudnn as m; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null)
  if [ -n "$d" ] && [ -f "$d/libcudnn.so.9" ]; then
    export SINTER_CUDNN="$d/libcudnn.so.9" LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi
say "run_cuda.sh at $COMMIT on $(hostname), $(date -u +%FT%TZ); parts $PARTS"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$SUMMARY"
say "cuDNN: ${SINTER_CUDNN:-libcudnn.so.9 from the library path, if there}"

if has build; then
  start=$(date +%s)
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSINTER_CCACHE=OFF > "$LOGS/configure.log" 2>&1 \
    || { tail -30 "$LOGS/configure.log"; exit 1; }
  ninja -C "$BUILD" -j"$(nproc)" sinter_cli sinter_tests > "$LOGS/build.log" 2>&1 \
    || { grep -E "error|FAILED" "$LOGS/build.log" | head -30; exit 1; }
  say "build: $(( $(date +%s) - start )) s"
fi

if has tests; then  # every CUDA test (the CI suite runs them on the simulated device) on the GPU
  start=$(date +%s)
  # about 330 s on an H100 host with the ONNX data present (CudaOnnxConformance alone takes 90 s)
  timeout ${TESTS_TIMEOUT:-480} "$BUILD/sinter_tests" --gtest_filter="${TESTS:-Cuda*:Nvrtc*}" > "$LOGS/gpu-tests.log" 2>&1
  say "CUDA tests on the GPU: rc=$? in $(( $(date +%s) - start )) s"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$LOGS/gpu-tests.log" | head -30 | tee -a "$SUMMARY"
fi

if has sanitizer; then  # memcheck and racecheck over the generated kernels' tests (small shapes)
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  say "compute-sanitizer: $("$cs" --version 2>&1 | grep -i version | head -1)"
  for tool in memcheck racecheck; do
    filter='CudaInductor.*:CudaEagerCodegen.*:CudaColumnReduction.*:CudaAttention.Flash*:CudaConv.*'
    [ "$tool" = racecheck ] &&
      filter='CudaInductor.RowReductions*:CudaInductor.Reductions*:CudaColumnReduction.*:CudaAttention.FlashBackward*'
    start=$(date +%s)
    timeout ${SAN_TIMEOUT:-240} "$cs" --tool "$tool" --error-exitcode 99 "$BUILD/sinter_tests" --gtest_filter="$filter" \
      > "$LOGS/sanitizer-$tool.log" 2>&1
    rc=$?
    say "$tool ($filter): rc=$rc in $(( $(date +%s) - start )) s;" \
      "$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOGS/sanitizer-$tool.log" | tail -1)"
    grep -E "^\[  (PASSED|FAILED) " "$LOGS/sanitizer-$tool.log" | head -5 | tee -a "$SUMMARY"
  done
fi

if has conformance; then  # ONNX's suites with their inputs on the GPU
  start=$(date +%s)
  # every suite under aot_eager; under inductor the PyTorch exports, the light CNNs and the small models
  timeout 200 "$BUILD/sinter" conformance --data "$SINTER_ONNX_DATA" --device cuda --backend aot_eager \
    --json "$OUT_DIR/onnx-conformance-cuda-$HOST-$DATE.json" > "$LOGS/conformance.log" 2>&1
  say "conformance on cuda, aot_eager: rc=$? in $(( $(date +%s) - start )) s"
  start=$(date +%s)
  timeout 200 "$BUILD/sinter" conformance --data "$SINTER_ONNX_DATA" --device cuda --backend inductor \
    --suite pytorch-operator --suite light --suite simple \
    --json "$OUT_DIR/onnx-conformance-cuda-inductor-$HOST-$DATE.json" > "$LOGS/conformance-inductor.log" 2>&1
  say "conformance on cuda, inductor: rc=$? in $(( $(date +%s) - start )) s"
  for f in conformance conformance-inductor; do
    grep -A8 "^ONNX conformance" "$LOGS/$f.log" | grep -E "ONNX|^all|^light" | tee -a "$SUMMARY"
    grep -E "^  FAILED" "$LOGS/$f.log" | head -20 | cut -c1-300 | tee -a "$SUMMARY"
  done
fi

if has bench; then  # sinter's GPU workloads, then PyTorch's on the same definitions, one ratio table
  sinter_json="$OUT_DIR/sinter-cuda-$HOST-$DATE.json"
  "$BUILD/sinter" bench --device cuda --json "$sinter_json" > "$LOGS/bench.log" 2>&1
  say "sinter bench --device cuda: rc=$?"
  grep -v '^\[sinter\]' "$LOGS/bench.log" | tail -14 | tee -a "$SUMMARY"  # the table, dynamic_mlp's line
  probe=""
  [ "${NO_PROBE:-0}" = 1 ] && probe="--no-probe"
  IFS=, read -ra modes <<< "${TORCH_MODES:-default}"
  for mode in "${modes[@]}"; do
    suffix=""
    [ "$mode" = default ] || suffix="-$mode"
    timeout ${TORCH_TIMEOUT:-420} python3 bench/vs_torch.py --device cuda $probe --mode "$mode" \
      --sinter "$sinter_json" --json "$OUT_DIR/torch-cuda-$HOST-$DATE$suffix.json" > "$LOGS/vs_torch$suffix.log" 2>&1
    say "vs_torch --device cuda --mode $mode: rc=$?"
    tail -30 "$LOGS/vs_torch$suffix.log" | tee -a "$SUMMARY"
  done
fi

if has train; then  # an AdamW training step under bfloat16 autocast, sinter against PyTorch on the same models
  sinter_json="$OUT_DIR/train-cuda-$HOST-$DATE.json"
  timeout ${TRAIN_TIMEOUT:-240} "$BUILD/sinter" bench --suite train --device cuda ${ONLY:+--only $ONLY} --json "$sinter_json" \
    > "$LOGS/train.log" 2>&1
  say "sinter bench --suite train --device cuda: rc=$?"
  grep -v '^\[sinter\]' "$LOGS/train.log" | tail -12 | tee -a "$SUMMARY"
  probe=""
  [ "${NO_PROBE:-0}" = 1 ] && probe="--no-probe"
  timeout ${TORCH_TIMEOUT:-420} python3 bench/vs_torch.py --train --device cuda $probe ${ONLY:+--only $ONLY} --sinter "$sinter_json" \
    --json "$OUT_DIR/torch-train-cuda-$HOST-$DATE.json" > "$LOGS/vs_torch_train.log" 2>&1
  say "vs_torch --train --device cuda: rc=$?"
  tail -20 "$LOGS/vs_torch_train.log" | tee -a "$SUMMARY"
fi

if has profile; then  # where each compiled graph's time goes, kernel by kernel
  prof="$OUT_DIR/profile-cuda-$HOST-$DATE.txt"
  IFS=, read -ra names <<< "${PROFILE:-gpt_block,resnet_block}"
  for name in "${names[@]}"; do
    for suite in "--device cuda" "--suite train --device cuda"; do
      echo "== SINTER_LOGS=profile,perf_hints sinter bench $suite --only $name" >> "$prof"
      SINTER_LOGS=profile,perf_hints timeout 120 "$BUILD/sinter" bench $suite --only "$name" >> "$prof" 2>&1
    done
    # torch.compile's kernels for the same definitions (inference, then the compiled training step)
    timeout 180 python3 bench/torch_profile.py --only "$name" >> "$prof" 2>&1
    timeout 180 python3 bench/torch_profile.py --only "$name" --train >> "$prof" 2>&1
  done
  say "profile: $prof"
  grep -E "calls, .* ms per call" "$prof" | tee -a "$SUMMARY"
fi

if has zoo; then  # the CPU model zoo on this host's cores against ONNX Runtime (python3's), same thread count
  start=$(date +%s)
  SINTER_BENCH_PYTHON=${SINTER_BENCH_PYTHON:-python3} timeout ${ZOO_TIMEOUT:-300} "$BUILD/sinter" bench --suite models \
    --models "${MODELS:-.cache/models}" ${ZOO_ONLY:+--only $ZOO_ONLY} --batches "${ZOO_BATCHES:-2}" \
    --json "$OUT_DIR/models-cpu-$HOST-host-$DATE.json" > "$LOGS/zoo.log" 2>&1
  say "sinter bench --suite models (CPU, $(nproc) threads): rc=$? in $(( $(date +%s) - start )) s"
  grep -A16 "^model " "$LOGS/zoo.log" | head -20 | tee -a "$SUMMARY"
fi

if has fuzz; then  # sinter fuzz on one seed per core for FUZZ_SECONDS each (scripts/fuzz_parallel.sh)
  start=$(date +%s)
  BUILD=$BUILD bash scripts/fuzz_parallel.sh "$OUT_DIR/fuzz" "${FUZZ_SEED:-801}" "$(( $(nproc) - 1 ))" \
    "${FUZZ_SECONDS:-240}" > "$LOGS/fuzz.log" 2>&1
  say "fuzz, $(( $(nproc) - 1 )) seeds from ${FUZZ_SEED:-801}: rc=$? in $(( $(date +%s) - start )) s"
  tail -3 "$LOGS/fuzz.log" | tee -a "$SUMMARY"
fi

tar -czf "$OUT_DIR/logs.tar.gz" -C "$LOGS" .
