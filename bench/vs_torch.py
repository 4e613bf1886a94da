#!/usr/bin/env python3
"""The CPU workloads of bench/WORKLOADS.md in PyTorch, eager and torch.compile, timed the way `sinter bench
--device cpu` times them, then one table of ratios against a sinter result file.

    python3 bench/vs_torch.py --threads 16 --sinter bench/results/sinter-cpu-HOST-DATE.json
    python3 bench/vs_torch.py --device cuda --sinter bench/results/sinter-cuda-HOST-DATE.json
    python3 bench/vs_torch.py --train --sinter bench/results/train-cpu-HOST-DATE.json

--device cuda runs the GPU column instead (its shapes and dtypes, bf16 where listed; bench/vs_torch_cuda.py):
timed with CUDA events after warm-up, eager and compiled alternately, medians; one table of sinter's compiled ms
(under the sinter mode that matches --mode) against PyTorch eager and torch.compile, cold compile seconds, GB/s and
TFLOP/s.

The definitions mirror tools/workloads.cpp (float32, the CPU shapes); change both together. Ratios are sinter
over PyTorch: below 1 means sinter is faster (or compiles faster).

Method, as in sinter's bench: eager and compiled are each run once to choose the number of repetitions (budget /
the slower call, between 3 and 200), then timed alternately (eager, compiled, eager, ...); medians are reported.
Compile seconds are measured in child processes of this script (--probe NAME): cold is a fresh process on an
empty TORCHINDUCTOR_CACHE_DIR, warm a second process on the same directory; each reports the wall time of its first
call(s) minus a steady call, which is what a user waits for. The inference workloads run under torch.no_grad().

--train times an AdamW training step instead (bench/vs_torch_train.py): PyTorch eager against torch.compile(model)
and torch.compile(train_step), against a `sinter bench --suite train` JSON.
"""
import argparse
import atexit
import datetime
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time

WORKLOADS = ["pointwise", "ln_gelu", "softmax", "mlp", "gpt_block", "naive_attention", "resnet_block", "small_ops",
             "dynamic_mlp"]
GPU_ONLY_WORKLOADS = ["reduce_sum"]  # bench/WORKLOADS.md: defined for the GPU column only
DYNAMIC_BATCHES = [1, 7, 33, 64, 100, 257, 512, 999, 2048, 3]
MLP_D, MLP_H = 1024, 4096


def make_workload(torch, name):
    """Returns (fn, inputs, shape text, min bytes, flops) for one workload; fn may be an nn.Module."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(1234)
    randn = torch.randn
    if name == "pointwise":
        n = 16 << 20
        return (lambda x: torch.sigmoid(x * 1.5 + 0.5) * torch.tanh(x) + torch.relu(x)), [randn(n)], f"[{n}]", \
            2.0 * 4 * n, 0
    if name == "ln_gelu":
        n, d = 4096, 1024
        w, b = torch.rand(d) + 0.5, randn(d) * 0.1
        return (lambda x, r: F.gelu(F.layer_norm(x + r, (d,), w, b))), [randn(n, d), randn(n, d)], f"{n}x{d}", \
            4.0 * (3 * n * d + 2 * d), 0
    if name == "softmax":
        n, d = 8192, 1024
        return (lambda x: torch.softmax(x * 0.125, -1)), [randn(n, d)], f"{n}x{d}", 2.0 * 4 * n * d, 0
    if name == "mlp":
        t = 512
        return mlp(torch), [randn(t, MLP_D)], f"T{t} D{MLP_D} H{MLP_H}", 0, 2.0 * 2 * t * MLP_D * MLP_H
    if name == "gpt_block":
        b, s, d, h = 1, 256, 768, 12
        return GptBlock(torch, d, h).eval(), [randn(b, s, d)], f"B{b} S{s} D{d} H{h}", 0, \
            2.0 * 12 * b * s * d * d + 4.0 * b * s * s * d
    if name == "naive_attention":
        b, h, s, d = 1, 12, 256, 64
        scale = d ** -0.5
        return (lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) * scale, -1) @ v), \
            [randn(b, h, s, d) for _ in range(3)], f"B{b} H{h} S{s} D{d}", 0, 4.0 * b * h * s * s * d
    if name == "resnet_block":
        n, c, hw = 8, 64, 56
        block = ResNetBlock(torch, c).eval().to(memory_format=torch.channels_last)
        x = randn(n, c, hw, hw).contiguous(memory_format=torch.channels_last)
        return block, [x], f"N{n} C{c} {hw}x{hw} NHWC", 0, 2 * 2.0 * n * hw * hw * c * c * 9
    if name == "small_ops":
        n = 64

        def small_ops(x, w):
            for _ in range(10):
                x = torch.relu(x * 0.9 + 0.1)
                x = x - x.mean(-1, keepdim=True)
                x = torch.tanh(x) + w
            return x
        return small_ops, [randn(n, n), randn(n, n)], f"{n}x{n}", 3.0 * 4 * n * n, 0
    raise SystemExit(f"unknown workload {name}")


def mlp(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(MLP_D, MLP_H), nn.GELU(), nn.Linear(MLP_H, MLP_D)).eval()


def GptBlock(torch, d, h):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = h
            self.ln1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln2, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, s, d_ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d_ // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, d_))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
    return Block()


def ResNetBlock(torch, c):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            for bn in (self.bn1, self.bn2):  # as sinter's randomize_bn_stats
                bn.running_mean.copy_(torch.randn(c) * 0.1)
                bn.running_var.copy_(torch.rand(c) * 0.5 + 0.75)
                bn.weight.data.copy_(torch.rand(c) * 0.5 + 0.75)
                bn.bias.data.copy_(torch.randn(c) * 0.1)

        def forward(self, x):
            return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))
    return Block()


# ---- timing, as tools/bench_util.cpp ----
def time_ms(fn, reps=10, warmup=2):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        t.append((time.perf_counter() - start) * 1e3)
    t.sort()
    return t[len(t) // 2]


def time_pair_ms(a, b, budget_ms):
    """a and b timed alternately, medians of each (tools/bench_util.cpp's time_pair_ms)."""
    once = max(time_ms(a, 1, 1), time_ms(b, 1, 1))
    reps = int(min(max(budget_ms / max(once, 1e-3), 3.0), 200.0))
    ta, tb = [], []
    for _ in range(reps):
        for fn, t in ((a, ta), (b, tb)):
            start = time.perf_counter()
            fn()
            t.append((time.perf_counter() - start) * 1e3)
    ta.sort()
    tb.sort()
    return ta[len(ta) // 2], tb[len(tb) // 2]


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def rel_err(out, ref):
    worst = 0.0
    for o, r in zip(as_list(out), as_list(ref)):
        r64 = r.double()
        denom = float(r64.norm())
        diff = float((o.double() - r64).norm())
        worst = max(worst, diff / denom if denom > 0 else diff)
    return worst


def compiled_graphs(torch):
    try:
        return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
    except Exception:  # an internal counter; absent in some versions
        return None


def generated_kernels(torch):
    try:
        return int(torch._inductor.metrics.generated_kernel_count)
    except Exception:
        return None


def reset_counters(torch):
    torch._dynamo.reset()
    try:
        torch._dynamo.utils.counters.clear()
        torch._inductor.metrics.reset()
    except Exception:
        pass


# ---- the child that measures compile time ----
def probe(torch, name, mode):
    """Compile seconds of one workload in this (fresh) process: first call(s) minus a steady call."""
    reset_counters(torch)
    with torch.no_grad():
        if name == "dynamic_mlp":
            model = mlp(torch)
            compiled = torch.compile(model, mode=mode)
            total = 0.0
            for b in DYNAMIC_BATCHES:
                x = torch.randn(b, MLP_D)
                start = time.perf_counter()
                compiled(x)
                first = time.perf_counter() - start
                total += max(first - time_ms(lambda: compiled(x), 1, 0) / 1e3, 0.0)
            return total
        fn, inputs, *_ = make_workload(torch, name)
        compiled = torch.compile(fn, mode=mode)
        start = time.perf_counter()
        compiled(*inputs)
        first = time.perf_counter() - start
        return max(first - time_ms(lambda: compiled(*inputs), 1, 0) / 1e3, 0.0)


def probe_compile_seconds(name, args, cache_dir):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    cmd = [sys.executable, os.path.abspath(__file__), "--probe", name, "--threads", str(args.threads),
           "--mode", args.mode, "--device", args.device]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("probe compile_s="):
            return float(line.split("=", 1)[1])
    print(f"  compile-time probe of {name} failed (status {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}",
          file=sys.stderr)
    return None


def cold_and_warm(name, args):
    with tempfile.TemporaryDirectory(prefix="torch-bench-cache-") as d:
        return probe_compile_seconds(name, args, d), probe_compile_seconds(name, args, d)


# ---- the benchmark ----
def bench_one(torch, name, args, budget_ms):
    fn, inputs, shape, nbytes, flops = make_workload(torch, name)
    row = {"workload": name, "backend": "torch.compile", "mode": args.mode, "dtype": "f32", "shape": shape}
    with torch.no_grad():
        ref = fn(*inputs)
        reset_counters(torch)
        compiled = torch.compile(fn, mode=args.mode)
        start = time.perf_counter()
        out = compiled(*inputs)
        row["first_call_ms"] = (time.perf_counter() - start) * 1e3
        row["max_rel_err"] = rel_err(out, ref)
        eager_ms, compiled_ms = time_pair_ms(lambda: fn(*inputs), lambda: compiled(*inputs), budget_ms)
    row.update(eager_ms=eager_ms, compiled_ms=compiled_ms, speedup=eager_ms / compiled_ms,
               kernels=None, kernels_generated=generated_kernels(torch), compiles=compiled_graphs(torch),
               gbps=nbytes / (compiled_ms * 1e6) if nbytes else None,
               tflops=flops / (compiled_ms * 1e9) if flops else None,
               eager_gbps=nbytes / (eager_ms * 1e6) if nbytes else None,
               eager_tflops=flops / (eager_ms * 1e9) if flops else None,
               peak_mb_eager=None, peak_mb_compiled=None)
    if not args.no_probe:
        row["compile_s_cold"], row["compile_s_warm"] = cold_and_warm(name, args)
    return row


def bench_dynamic_mlp(torch, args):
    budget_ms = 50 if args.quick else 300  # per batch size
    torch.manual_seed(1234)
    model = mlp(torch)
    xs = [torch.randn(b, MLP_D) for b in DYNAMIC_BATCHES]
    row = {"workload": "dynamic_mlp", "backend": "torch.compile", "mode": args.mode, "dtype": "f32",
           "shape": f"D{MLP_D} H{MLP_H} T 1..2048 (10 sizes)", "batch_sizes": DYNAMIC_BATCHES}
    with torch.no_grad():
        refs = [model(x) for x in xs]
        reset_counters(torch)
        compiled = torch.compile(model, mode=args.mode)
        first, err = [], 0.0
        for x, ref in zip(xs, refs):
            start = time.perf_counter()
            y = compiled(x)
            first.append((time.perf_counter() - start) * 1e3)
            err = max(err, rel_err(y, ref))
        eager_ms = compiled_ms = 0.0  # one pass over every batch size
        for x in xs:
            e, c = time_pair_ms(lambda: model(x), lambda: compiled(x), budget_ms)
            eager_ms += e
            compiled_ms += c
    flops = sum(4.0 * b * MLP_D * MLP_H for b in DYNAMIC_BATCHES)
    row.update(eager_ms=eager_ms, compiled_ms=compiled_ms, speedup=eager_ms / compiled_ms, kernels=None,
               kernels_generated=generated_kernels(torch), compiles=compiled_graphs(torch), first_call_ms=first,
               max_rel_err=err, gbps=None, tflops=flops / (compiled_ms * 1e9),
               eager_gbps=None, eager_tflops=flops / (eager_ms * 1e9), peak_mb_eager=None, peak_mb_compiled=None)
    if not args.no_probe:
        row["compile_s_cold"], row["compile_s_warm"] = cold_and_warm("dynamic_mlp", args)
    return row


def fmt(v, spec=".3f"):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None


def print_torch_table(rows):
    print(f"\n{'workload':<16} {'torch eager ms':>14} {'torch.compile ms':>16} {'speedup':>8} {'graphs':>6} "
          f"{'kernels':>7} {'cold s':>8} {'warm s':>8} {'rel err':>8}")
    for r in rows:
        print(f"{r['workload']:<16} {fmt(r['eager_ms']):>14} {fmt(r['compiled_ms']):>16} "
              f"{fmt(r['speedup'], '.2f') + 'x':>8} {fmt(r.get('compiles'), 'd'):>6} "
              f"{fmt(r.get('kernels_generated'), 'd'):>7} {fmt(r.get('compile_s_cold')):>8} "
              f"{fmt(r.get('compile_s_warm')):>8} {fmt(r.get('max_rel_err'), '.1e'):>8}")


def print_ratio_table(torch_rows, sinter):
    """One table: sinter over PyTorch, per workload and sinter backend."""
    by_name = {r["workload"]: r for r in torch_rows}
    if sinter.get("threads") is not None and sinter["threads"] != torch_threads_used:
        print(f"\nwarning: sinter ran with {sinter['threads']} threads, PyTorch with {torch_threads_used}")
    print(f"\nsinter ({sinter.get('sinter_commit', '?')}, {sinter.get('machine', '?')}) over PyTorch "
          f"(below 1: sinter faster)")
    cols = ["workload", "sinter backend", "eager s/t", "compiled s/t", "sinter ms", "t.compile ms", "cold s",
            "t cold s", "cold s/t", "warm s", "t warm s", "warm s/t"]
    widths = [16, 14, 9, 12, 10, 12, 9, 9, 9, 9, 9, 9]

    def line(cells):
        return " ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(cols))
    for s in sinter.get("results", []):
        t = by_name.get(s.get("workload"))
        if t is None:
            continue
        if s.get("error"):
            print(f"{s['workload']:<16} {s.get('backend', '?'):<14} sinter failed: {s['error'][:120]}")
            continue
        g = lambda key, src=s: src.get(key)
        print(line([s["workload"], s.get("backend", "?"),
                    fmt(ratio(g("eager_ms"), t["eager_ms"]), ".3g"),
                    fmt(ratio(g("compiled_ms"), t["compiled_ms"]), ".3g"),
                    fmt(g("compiled_ms")), fmt(t["compiled_ms"]),
                    fmt(g("compile_s_cold"), ".3g"), fmt(t.get("compile_s_cold"), ".3g"),
                    fmt(ratio(g("compile_s_cold"), t.get("compile_s_cold")), ".3g"),
                    fmt(g("compile_s_warm"), ".3g"), fmt(t.get("compile_s_warm"), ".3g"),
                    fmt(ratio(g("compile_s_warm"), t.get("compile_s_warm")), ".3g")]))
    t = by_name.get("dynamic_mlp")
    for s in sinter.get("results", []):
        if t and s.get("workload") == "dynamic_mlp" and not s.get("error"):
            firsts = lambda r: " ".join(fmt(v, ".0f") for v in r.get("first_call_ms") or [])
            print(f"\ndynamic_mlp, sinter {s.get('backend')}: {s.get('compiles')} compiles, "
                  f"first-call ms per batch size {firsts(s)}\n"
                  f"             PyTorch: {fmt(t.get('compiles'), 'd')} graphs, first-call ms {firsts(t)}"
                  f"\n             (batch sizes {' '.join(str(b) for b in DYNAMIC_BATCHES)})")


torch_threads_used = None


def write_results(args, fields, kind, torch):
    """PyTorch's results as JSON with machine, date and versions: --json, else beside the sinter file, else
    bench/results/torch-KIND-HOST-DATE.json."""
    host = socket.gethostname()
    cpu = platform.processor() or "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = {"machine": f"{host} ({cpu}, {os.cpu_count()} cores)", "date": datetime.date.today().isoformat(),
           "device": args.device, "threads": torch_threads_used, "torch_version": torch.__version__,
           "quick": args.quick, **fields}
    path = args.json
    if not path:
        folder = os.path.dirname(os.path.abspath(args.sinter)) if args.sinter else \
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
        path = os.path.join(folder, f"torch-{kind}-{host}-{out['date']}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {path}")


def main():
    global torch_threads_used
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sinter", help="a sinter bench --device cpu (or cuda) JSON to compare with")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="the CPU or the GPU column of "
                   "bench/WORKLOADS.md (default cpu)")
    p.add_argument("--threads", type=int, default=None, help="intra-op threads (default: the sinter file's, else "
                   "PyTorch's default)")
    p.add_argument("--only", help="one workload")
    p.add_argument("--quick", action="store_true", help="shorter timing runs")
    p.add_argument("--mode", default="default", help="torch.compile mode (default, max-autotune-no-cudagraphs, ...)")
    p.add_argument("--no-probe", action="store_true", help="skip the cold/warm compile-time child processes")
    p.add_argument("--json", help="where to write PyTorch's results (default: beside the sinter file, or "
                   "bench/results/)")
    p.add_argument("--train", action="store_true", help="the training steps (bench/vs_torch_train.py) against a "
                   "sinter bench --suite train JSON")
    p.add_argument("--probe", help=argparse.SUPPRESS)
    args = p.parse_args()

    sinter = None
    if args.sinter:
        with open(args.sinter) as f:
            sinter = json.load(f)
        if args.threads is None:
            args.threads = sinter.get("threads")
    if args.probe is None and "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        # This process compiles too (for the timings); keep it off the user's cache and start it empty.
        run_cache = tempfile.mkdtemp(prefix="torch-bench-run-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = run_cache
        atexit.register(shutil.rmtree, run_cache, True)
    import torch  # after the cache directory is chosen
    if args.threads:
        torch.set_num_threads(args.threads)
    torch_threads_used = torch.get_num_threads()
    args.threads = torch_threads_used

    if args.train:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import vs_torch_train as train
        base = sys.modules[__name__]
        if args.probe:
            train.probe(torch, base, args.probe, args.device == "cuda")
            return
        print(f"PyTorch {torch.__version__}, {torch_threads_used} threads, training steps (AdamW)")
        rows = train.run(torch, args, base)
        train.print_tables(rows, sinter, base)
        write_results(args, {"suite": "train", "optimizer": "AdamW(lr=1e-3)", "results": rows}, "train", torch)
        return

    cuda = None
    if args.device == "cuda":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import vs_torch_cuda as cuda
        base = sys.modules[__name__]

    if args.probe:
        seconds = cuda.probe(torch, args.probe, args.mode, base) if cuda else probe(torch, args.probe, args.mode)
        print(f"probe compile_s={seconds:.6f}")
        return

    known = WORKLOADS + (GPU_ONLY_WORKLOADS if cuda else [])
    names = [n for n in known if not args.only or n == args.only]
    if not names:
        raise SystemExit(f"no workload named {args.only}; known: {', '.join(known)}")
    if cuda:
        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
        print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}), {gpu}, torch.compile mode {args.mode}")
        rows = cuda.run(torch, args, names, base)
    else:
        print(f"PyTorch {torch.__version__}, {torch_threads_used} threads, torch.compile mode {args.mode}")
        budget = 150 if args.quick else 1000
        rows = []
        for name in names:
            print(f"  {name} ...", flush=True)
            rows.append(bench_dynamic_mlp(torch, args) if name == "dynamic_mlp" else
                        bench_one(torch, name, args, budget))
    print_torch_table(rows)
    extra = {"suite": "workloads", "results": rows}
    if cuda:
        extra = {"gpu": gpu, "cuda_version": torch.version.cuda, **extra}
    write_results(args, extra, args.device, torch)
    if sinter and cuda:
        if sinter.get("device") not in (None, "cuda"):
            print(f"\nwarning: {args.sinter} is from device {sinter.get('device')}, not cuda")
        cuda.print_ratio_table(rows, sinter, base)
    elif sinter:
        print_ratio_table(rows, sinter)


if __name__ == "__main__":
    main()
