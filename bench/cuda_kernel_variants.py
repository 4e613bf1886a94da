"""Times generated CUDA kernels alone, back to back, to choose the CUDA code generator's launch and row-width rules.

    # on any machine: dump the generated source of the GPU workloads (the simulator is enough)
    SINTER_CUDA_SIM=1 SINTER_DEBUG_DIR=/tmp/dbg ./build/sinter bench --device cuda --quick --only softmax
    cp /tmp/dbg/graph_0-*/kernels.cu SRC_DIR/softmax-base.cu     # one file per WORKLOAD-VARIANT
    # on the GPU machine (nvcc on the PATH):
    python3 bench/cuda_kernel_variants.py SRC_DIR OUT_DIR

Each SRC_DIR/WORKLOAD-VARIANT.cu (WORKLOAD one of pointwise, softmax, ln_gelu, as bench/WORKLOADS.md defines
them; kernel0 its only kernel) has its --quick row or element count replaced by the GPU shape's, is compiled by
nvcc with the flags sinter gives NVRTC (-fmad=false, sm_90), and is launched with 16, 32 and 64 blocks per SM and
with a block per row (or per vector step), the best of 5 repetitions of 20 launches between two CUDA events. The
register count comes from ptxas. Prints one line per (variant, grid); the binaries and sources go to OUT_DIR.
"""
import concurrent.futures
import glob
import os
import re
import subprocess
import sys

SMS = 132  # an H200's multiprocessors
# name: (buffers as (elements, bytes each), iterations of the launch, iterations per block of a flat kernel,
# bytes moved, the --quick count in the source and the GPU shape's)
WORKLOADS = {
    "pointwise": ([(64 << 20, 4)] * 2, 64 << 20, 1024, 2 * 4 * (64 << 20),
                  ("const sn_i64 total_ = 1048576;", "const sn_i64 total_ = 67108864;")),
    "softmax": ([(32768 * 4096, 4)] * 2, 32768, 1, 2 * 4 * 32768 * 4096,
                ("const sn_i64 rows_ = 512;", "const sn_i64 rows_ = 32768;")),
    "ln_gelu": ([(16384 * 4096, 2)] * 2 + [(4096, 2)] * 2 + [(16384 * 4096, 2)], 16384, 1, 2 * 3 * 16384 * 4096,
                ("const sn_i64 rows_ = 256;", "const sn_i64 rows_ = 16384;")),
}
GRIDS = {"grid16": 16, "grid32": 32, "grid64": 64, "grid-all": 1 << 30}

MAIN = r"""
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
__global__ void fill16(unsigned short* p, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) p[i] = __float_as_uint(__sinf(i * 0.37f) * 2) >> 16;  // bfloat16 bits
}
__global__ void fill32(float* p, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) p[i] = __sinf(i * 0.37f) * 2;
}
int main() {
  long sizes[] = {@SIZES@}; int bytes[] = {@BYTES@}; const int nb = @NB@;
  std::vector<void*> bufs(nb);
  for (int i = 0; i < nb; ++i) {
    cudaMalloc(&bufs[i], sizes[i] * bytes[i]);
    if (bytes[i] == 2) fill16<<<(sizes[i] + 255) / 256, 256>>>((unsigned short*)bufs[i], sizes[i]);
    else fill32<<<(sizes[i] + 255) / 256, 256>>>((float*)bufs[i], sizes[i]);
  }
  int* err; cudaMalloc(&err, 4); cudaMemset(err, 0, 4);
  std::vector<void*> params;
  for (int i = 0; i < nb; ++i) params.push_back(&bufs[i]);
  params.push_back(&err);
  long g = (@TOTAL@L + @PER@L - 1) / @PER@L, cap = @SMS@L * @GRIDMUL@L;
  if (g > cap) g = cap;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) cudaLaunchKernel((void*)kernel0, dim3(g), dim3(@BLOCK@), params.data(), 0, 0);
  cudaDeviceSynchronize();
  float best = 1e9;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(a);
    for (int i = 0; i < 20; ++i) cudaLaunchKernel((void*)kernel0, dim3(g), dim3(@BLOCK@), params.data(), 0, 0);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); ms /= 20;
    if (ms < best) best = ms;
  }
  printf("%.4f ms %.1f GB/s grid %ld %s\n", best, @MOVED@ / best / 1e6, g, cudaGetErrorString(cudaGetLastError()));
}
"""


def main():
    src_dir, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    jobs = []
    for path in sorted(glob.glob(os.path.join(src_dir, "*-*.cu"))):
        workload, variant = os.path.basename(path)[:-3].split("-", 1)
        bufs, total, per, moved, (quick, full) = WORKLOADS[workload]
        text = open(path).read().replace(quick, full)
        block = int(re.search(r"__launch_bounds__\((\d+)", text).group(1))
        for grid, mul in GRIDS.items():
            fill = {"SIZES": ",".join(str(n) for n, _ in bufs), "BYTES": ",".join(str(b) for _, b in bufs),
                    "NB": str(len(bufs)), "TOTAL": str(total), "PER": str(per), "SMS": str(SMS),
                    "GRIDMUL": str(mul), "BLOCK": str(block), "MOVED": f"{moved}.0"}
            main_text = MAIN
            for k, v in fill.items():
                main_text = main_text.replace(f"@{k}@", v)
            name = os.path.join(out, f"{workload}-{variant}-{grid}")
            open(name + ".cu", "w").write(text + main_text)
            jobs.append((workload, f"{variant}-{grid}", name))

    def build(job):
        r = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-fmad=false", "-Xptxas", "-v", "-o", job[2], job[2] + ".cu"],
                           capture_output=True, text=True)
        regs = re.findall(r"Used (\d+) registers", r.stderr)
        return job, r.returncode, regs[-1] if regs else "?", r.stderr[-2000:]

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        built = list(pool.map(build, jobs))
    for (workload, variant, name), rc, regs, err in built:
        if rc:
            print(f"{workload:10} {variant:22} BUILD FAILED\n{err}")
            continue
        r = subprocess.run([name], capture_output=True, text=True)
        print(f"{workload:10} {variant:22} regs {regs:>4}  {r.stdout.strip()}", flush=True)


if __name__ == "__main__":
    main()
