#!/usr/bin/env bash
# Builds sinter on a machine with an NVIDIA GPU and runs the CUDA tests on it for real (and once more on the
# simulated device, to compare), writing logs into OUT.
#   bash scripts/gpu_check.sh OUT [gtest filter]
set -u
out=${1:?usage: gpu_check.sh OUT [filter]}
filter=${2:-'Cuda*:Nvrtc*'}
mkdir -p "$out"
jobs=$(nproc)
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j"$jobs" > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
export SINTER_CACHE_DIR="$out/../sinter-cache"
env -u SINTER_CUDA_SIM ./build-gpu/sinter_tests --gtest_filter="$filter" > "$out/gpu-tests.log" 2>&1
echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/gpu-tests.log" | head -40
SINTER_CUDA_SIM=1 ./build-gpu/sinter_tests --gtest_filter="$filter" > "$out/sim-tests.log" 2>&1
echo "simulated tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$out/sim-tests.log" | head -20
