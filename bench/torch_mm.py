"""PyTorch's float32 GEMM (MKL/oneDNN) on bench/sgemm_probe.cpp's shapes, to set beside that probe's output.

Usage: python3 bench/torch_mm.py [threads]. B^T shapes run as F.linear(x, weight[N, K]) as nn.Linear does;
the others as torch.mm. Times are the minimum over repeats, as in the probe.
"""
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = [(256, 2304, 768, True, 0, "gpt_qkv"), (256, 768, 768, True, 0, "gpt_proj"),
          (256, 3072, 768, True, 0, "gpt_up"), (256, 768, 3072, True, 0, "gpt_down"),
          (512, 4096, 1024, True, 0, "mlp_up"), (512, 1024, 4096, True, 0, "mlp_down"),
          (2048, 4096, 1024, True, 0, "dmlp_up"), (2048, 1024, 4096, True, 0, "dmlp_down"),
          (25088, 64, 576, False, 0, "conv3x3"), (2048, 2048, 2048, False, 0, "square"),
          (64, 256, 64, True, 1, "attn_qk_1t"), (64, 64, 256, False, 1, "attn_pv_1t")]


def best_ms(f, reps=15):
    f()
    best = 1e9
    for _ in range(reps):
        t = time.perf_counter()
        f()
        best = min(best, (time.perf_counter() - t) * 1e3)
    return best


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    print(f"PyTorch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}, "
          f"mkl {torch.backends.mkl.is_available()}")
    with torch.no_grad():
        for m, n, k, bt, t, what in SHAPES:
            torch.set_num_threads(t or threads)
            a = torch.rand(m, k) * 2 - 1
            if bt:
                w = torch.rand(n, k) * 2 - 1
                ms = best_ms(lambda: F.linear(a, w))
            else:
                b = torch.rand(k, n) * 2 - 1
                ms = best_ms(lambda: torch.mm(a, b))
            print(f"{what:<11} {m:5d}x{n:5d}x{k:5d}{' B^T' if bt else '    '} {t or threads:2d}t  torch {ms:8.4f} ms "
                  f"{2.0 * m * n * k / ms / 1e6:5.0f} GF/s")


if __name__ == "__main__":
    main()
