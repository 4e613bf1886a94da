#!/usr/bin/env bash
# Builds sinter on a machine with an NVIDIA GPU and runs the CUDA tests on it for real (and once more on the
# simulated device, to compare), writing logs into LOG_DIR.
#   bash scripts/gpu_check.sh LOG_DIR [gtest filter]
set -u
logs=${1:?usage: gpu_check.sh LOG_DIR [filter]}
filter=${2:-'Cuda*:Nvrtc*'}
mkdir -p "$logs"
jobs=$(nproc)
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; exit 1; }
cmake --build build-gpu -j"$jobs" > "$logs/build.log" 2>&1 || { grep -E "error|FAILED" "$logs/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$logs/gpu.txt" 2>&1
cat "$logs/gpu.txt"
export SINTER_CACHE_DIR=$(mktemp -d)  # not under LOG_DIR: the kernel cache is thousands of files
env -u SINTER_CUDA_SIM ./build-gpu/sinter_tests --gtest_filter="$filter" > "$logs/gpu-tests.log" 2>&1
echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$logs/gpu-tests.log" | head -40
SINTER_CUDA_SIM=1 ./build-gpu/sinter_tests --gtest_filter="$filter" > "$logs/sim-tests.log" 2>&1
echo "simulated tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$logs/sim-tests.log" | head -20
