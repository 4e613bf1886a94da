"""The GPU column of bench/WORKLOADS.md for bench/vs_torch.py (--device cuda): the same definitions at the GPU
shapes and dtypes, timed with CUDA events, and the table against a `sinter bench --device cuda` result file:
under --mode default sinter's compiled_ms, under reduce-overhead its reduce_overhead_ms, under max-autotune(-no-
cudagraphs) its max_autotune_ms (SINTER_MS_FIELD below).

`base` below is bench/vs_torch.py itself (passed in, not imported again): the model classes, the error measure,
the Inductor counters, the compile-time child processes and the formatting come from it.
"""
import time

DEV = "cuda"
DYNAMIC_D, DYNAMIC_H = 1024, 4096  # dynamic_mlp: the mlp with D=1024, H=4096, in bf16
DTYPE_NAMES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


def dtype_name(dt):
    return DTYPE_NAMES.get(str(dt).replace("torch.", ""), str(dt))


def mlp(torch, d, h, dtype):
    nn = torch.nn
    return nn.Sequential(nn.Linear(d, h, device=DEV, dtype=dtype), nn.GELU(),
                         nn.Linear(h, d, device=DEV, dtype=dtype)).eval()


def make_workload(torch, name, base):
    """Returns (fn, inputs, shape text, min bytes, flops, dtype) for one workload at its GPU shape."""
    F = torch.nn.functional
    f32, bf16 = torch.float32, torch.bfloat16
    torch.manual_seed(1234)

    def randn(*shape, dtype=f32):
        return torch.randn(*shape, device=DEV, dtype=dtype)
    if name == "pointwise":
        n = 64 << 20
        return (lambda x: torch.sigmoid(x * 1.5 + 0.5) * torch.tanh(x) + torch.relu(x)), [randn(n)], f"[{n}]", \
            2.0 * 4 * n, 0, f32
    if name == "ln_gelu":
        n, d = 16384, 4096
        w = (torch.rand(d, device=DEV) + 0.5).to(bf16)
        b = (torch.randn(d, device=DEV) * 0.1).to(bf16)
        return (lambda x, r: F.gelu(F.layer_norm(x + r, (d,), w, b))), [randn(n, d, dtype=bf16),
                                                                           randn(n, d, dtype=bf16)], \
            f"[{n}, {d}]", 2.0 * (3 * n * d + 2 * d), 0, bf16
    if name == "softmax":
        n, d = 32768, 4096
        return (lambda x: torch.softmax(x * 0.125, -1)), [randn(n, d)], f"[{n}, {d}]", 2.0 * 4 * n * d, 0, f32
    if name == "mlp":
        t, d, h = 8192, 4096, 16384
        return mlp(torch, d, h, bf16), [randn(t, d, dtype=bf16)], f"T{t} D{d} H{h}", 0, 2.0 * 2 * t * d * h, bf16
    if name == "gpt_block":
        b, s, d, h = 8, 1024, 1024, 16
        return base.GptBlock(torch, d, h).eval().to(DEV, bf16), [randn(b, s, d, dtype=bf16)], \
            f"B{b} S{s} D{d} H{h}", 0, 2.0 * 12 * b * s * d * d + 4.0 * b * s * s * d, bf16
    if name == "naive_attention":
        b, h, s, d = 8, 16, 2048, 64
        scale = d ** -0.5
        return (lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) * scale, -1) @ v), \
            [randn(b, h, s, d, dtype=bf16) for _ in range(3)], f"B{b} H{h} S{s} D{d}", 0, \
            4.0 * b * h * s * s * d, bf16
    if name == "resnet_block":
        n, c, hw = 64, 64, 56
        block = base.ResNetBlock(torch, c).eval().to(DEV, bf16, memory_format=torch.channels_last)
        x = randn(n, c, hw, hw, dtype=bf16).contiguous(memory_format=torch.channels_last)
        return block, [x], f"N{n} C{c} {hw}x{hw} NHWC", 0, 2 * 2.0 * n * hw * hw * c * c * 9, bf16
    if name == "reduce_sum":
        n = 64 << 20
        return (lambda x: x.sum()), [randn(n)], f"[{n}]", 4.0 * n, 0, f32
    if name == "small_ops":
        n = 256

        def small_ops(x, w):
            for _ in range(10):
                x = torch.relu(x * 0.9 + 0.1)
                x = x - x.mean(-1, keepdim=True)
                x = torch.tanh(x) + w
            return x
        return small_ops, [randn(n, n), randn(n, n)], f"[{n}, {n}]", 3.0 * 4 * n * n, 0, f32
    raise SystemExit(f"unknown workload {name}")


# ---- timing with CUDA events ----
def event_times_ms(torch, fns, reps):
    """Each of fns called reps times, alternately; the device time of each call from a pair of events."""
    pairs = [[] for _ in fns]
    torch.cuda.synchronize()
    for _ in range(reps):
        for fn, p in zip(fns, pairs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            p.append((start, end))
    torch.cuda.synchronize()
    return [sorted(s.elapsed_time(e) for s, e in p) for p in pairs]


def time_pair_ms(torch, a, b, budget_ms, warmup=3):
    """a and b warmed up, then timed alternately; medians of each. Repetitions as the CPU path: budget / the
    slower call, between 3 and 200."""
    for _ in range(warmup):
        a()
        b()
    once = max(t[0] for t in event_times_ms(torch, [a, b], 1))
    reps = int(min(max(budget_ms / max(once, 1e-3), 3.0), 200.0))
    ta, tb = event_times_ms(torch, [a, b], reps)
    return ta[len(ta) // 2], tb[len(tb) // 2]


def first_minus_steady_s(torch, fn):
    """Seconds of a first call (compiling) minus a steady one, both waited for on the device."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return max(first - (time.perf_counter() - start), 0.0)


# ---- the child that measures compile time (vs_torch.py --probe NAME --device cuda) ----
def probe(torch, name, mode, base):
    base.reset_counters(torch)
    with torch.no_grad():
        if name == "dynamic_mlp":
            torch.manual_seed(1234)
            model = mlp(torch, DYNAMIC_D, DYNAMIC_H, torch.bfloat16)
            xs = [torch.randn(b, DYNAMIC_D, device=DEV, dtype=torch.bfloat16) for b in base.DYNAMIC_BATCHES]
            compiled = torch.compile(model, mode=mode)
            return sum(first_minus_steady_s(torch, lambda: compiled(x)) for x in xs)
        fn, inputs, *_ = make_workload(torch, name, base)
        compiled = torch.compile(fn, mode=mode)
        return first_minus_steady_s(torch, lambda: compiled(*inputs))


# ---- the benchmark ----
def rates(nbytes, flops, eager_ms, compiled_ms):
    return dict(gbps=nbytes / (compiled_ms * 1e6) if nbytes else None,
                tflops=flops / (compiled_ms * 1e9) if flops else None,
                eager_gbps=nbytes / (eager_ms * 1e6) if nbytes else None,
                eager_tflops=flops / (eager_ms * 1e9) if flops else None)


def bench_one(torch, name, args, budget_ms, base):
    fn, inputs, shape, nbytes, flops, dtype = make_workload(torch, name, base)
    row = {"workload": name, "backend": "torch.compile", "mode": args.mode, "dtype": dtype_name(dtype),
           "shape": shape}
    with torch.no_grad():
        ref = fn(*inputs)
        base.reset_counters(torch)
        compiled = torch.compile(fn, mode=args.mode)
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = compiled(*inputs)
        torch.cuda.synchronize()
        row["first_call_ms"] = (time.perf_counter() - start) * 1e3
        row["max_rel_err"] = base.rel_err(out, ref)
        del out, ref
        eager_ms, compiled_ms = time_pair_ms(torch, lambda: fn(*inputs), lambda: compiled(*inputs), budget_ms)
    row.update(eager_ms=eager_ms, compiled_ms=compiled_ms, speedup=eager_ms / compiled_ms, kernels=None,
               kernels_generated=base.generated_kernels(torch), compiles=base.compiled_graphs(torch),
               **rates(nbytes, flops, eager_ms, compiled_ms), peak_mb_eager=None, peak_mb_compiled=None)
    del fn, inputs, compiled
    base.reset_counters(torch)
    torch.cuda.empty_cache()
    if not args.no_probe:
        row["compile_s_cold"], row["compile_s_warm"] = base.cold_and_warm(name, args)
    return row


def bench_dynamic_mlp(torch, args, base):
    budget_ms = 50 if args.quick else 300  # per batch size
    batches = base.DYNAMIC_BATCHES
    torch.manual_seed(1234)
    model = mlp(torch, DYNAMIC_D, DYNAMIC_H, torch.bfloat16)
    xs = [torch.randn(b, DYNAMIC_D, device=DEV, dtype=torch.bfloat16) for b in batches]
    row = {"workload": "dynamic_mlp", "backend": "torch.compile", "mode": args.mode, "dtype": "bf16",
           "shape": f"D{DYNAMIC_D} H{DYNAMIC_H} T 1..2048 (10 sizes)", "batch_sizes": batches}
    with torch.no_grad():
        refs = [model(x) for x in xs]
        base.reset_counters(torch)
        compiled = torch.compile(model, mode=args.mode)
        first, err = [], 0.0
        for x, ref in zip(xs, refs):
            torch.cuda.synchronize()
            start = time.perf_counter()
            y = compiled(x)
            torch.cuda.synchronize()
            first.append((time.perf_counter() - start) * 1e3)
            err = max(err, base.rel_err(y, ref))
        eager_ms = compiled_ms = 0.0  # one pass over every batch size
        for x in xs:
            e, c = time_pair_ms(torch, lambda: model(x), lambda: compiled(x), budget_ms)
            eager_ms += e
            compiled_ms += c
    flops = sum(4.0 * b * DYNAMIC_D * DYNAMIC_H for b in batches)
    row.update(eager_ms=eager_ms, compiled_ms=compiled_ms, speedup=eager_ms / compiled_ms, kernels=None,
               kernels_generated=base.generated_kernels(torch), compiles=base.compiled_graphs(torch),
               first_call_ms=first, max_rel_err=err, **rates(0, flops, eager_ms, compiled_ms),
               peak_mb_eager=None, peak_mb_compiled=None)
    del model, xs, refs, compiled
    base.reset_counters(torch)
    torch.cuda.empty_cache()
    if not args.no_probe:
        row["compile_s_cold"], row["compile_s_warm"] = base.cold_and_warm("dynamic_mlp", args)
    return row


def run(torch, args, names, base):
    """Times the named workloads on the GPU; returns PyTorch's rows."""
    if not torch.cuda.is_available():
        raise SystemExit("--device cuda: this PyTorch sees no CUDA device")
    budget = 150 if args.quick else 1000
    rows = []
    for name in names:
        print(f"  {name} ...", flush=True)
        rows.append(bench_dynamic_mlp(torch, args, base) if name == "dynamic_mlp"
                    else bench_one(torch, name, args, budget, base))
    return rows


# The sinter field timed under the counterpart of each torch.compile mode (sinter's max-autotune has no CUDA
# graphs; its reduce-overhead is the inductor's graphs as CUDA graphs). Under max-autotune the cold seconds
# compared are sinter's max_autotune_first_call_s (its first call, the measuring included, not less a steady one).
SINTER_MS_FIELD = {"default": "compiled_ms", "reduce-overhead": "reduce_overhead_ms",
                   "max-autotune-no-cudagraphs": "max_autotune_ms", "max-autotune": "max_autotune_ms"}


def print_ratio_table(torch_rows, sinter, base):
    """One table: sinter's compiled time against PyTorch's, per workload (and sinter backend, if it has several),
    under the sinter mode that matches the torch.compile mode of the rows."""
    fmt, ratio = base.fmt, base.ratio
    by_name = {r["workload"]: r for r in torch_rows}
    mode = torch_rows[0].get("mode", "default") if torch_rows else "default"
    field = SINTER_MS_FIELD.get(mode, "compiled_ms")
    print(f"\nsinter ({sinter.get('sinter_commit', '?')}, {sinter.get('gpu', '?')}) against PyTorch "
          f"(s/t.compile below 1: sinter faster); torch.compile mode {mode}, sinter's {field}")
    if mode == "max-autotune":
        print("(torch.compile's max-autotune adds CUDA graphs; sinter's max-autotune has none)")
    if sinter.get("simulated"):
        print("warning: the sinter file is from the simulated device")
    cols = ["workload", "dtype", "sinter ms", "t eager ms", "t.compile ms", "s/t.compile", "cold s", "t cold s",
            "GB/s", "t GB/s", "TFLOP/s", "t TFLOP/s"]
    widths = [26, 8, 10, 11, 12, 11, 8, 8, 8, 8, 8, 9]

    def line(cells):
        return " ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(cols))
    mixed, shapes = False, []
    for s in sinter.get("results", []):
        t = by_name.get(s.get("workload"))
        if t is None:
            continue
        label = s["workload"] + (f" ({s['backend']})" if s.get("backend") else "")
        if s.get("error"):
            print(f"{label:<26} sinter failed: {str(s['error'])[:120]}")
            continue
        dtype = t["dtype"] if s.get("dtype") in (None, t["dtype"]) else f"{s['dtype']}/{t['dtype']}"
        mixed = mixed or "/" in dtype
        if s.get("shape") not in (None, t["shape"]):
            shapes.append(f"{s['workload']}: sinter {s['shape']}, PyTorch {t['shape']}")
        # Older sinter files named the compile seconds compile_cold_s; under max-autotune, its first call's.
        cold = s.get("compile_s_cold", s.get("compile_cold_s"))
        if field == "max_autotune_ms":
            cold = s.get("max_autotune_first_call_s")
        sinter_ms = s.get(field)
        scale = ratio(s.get("compiled_ms"), sinter_ms)  # sinter's rates are of compiled_ms: rescaled to sinter_ms
        gbps, tflops = (s[k] * scale if s.get(k) is not None and scale is not None else None
                        for k in ("gbps", "tflops"))
        print(line([label, dtype, fmt(sinter_ms), fmt(t["eager_ms"]), fmt(t["compiled_ms"]),
                    fmt(ratio(sinter_ms, t["compiled_ms"]), ".3g"),
                    fmt(cold, ".3g"), fmt(t.get("compile_s_cold"), ".3g"),
                    fmt(gbps, ".0f"), fmt(t.get("gbps"), ".0f"), fmt(tflops, ".0f"), fmt(t.get("tflops"), ".0f")]))
    if mixed:
        print("dtype a/b: sinter ran a, PyTorch b")
    for d in shapes:
        print(f"warning: different shapes, {d}")
    t = by_name.get("dynamic_mlp")
    for s in sinter.get("results", []):
        if t and s.get("workload") == "dynamic_mlp" and not s.get("error"):
            firsts = lambda r: " ".join(fmt(v, ".1f") for v in r.get("first_call_ms") or [])
            print(f"\ndynamic_mlp: sinter {s.get('compiles')} compiles, first-call ms per batch size {firsts(s)}\n"
                  f"             PyTorch {fmt(t.get('compiles'), 'd')} graphs, first-call ms {firsts(t)}\n"
                  f"             (batch sizes {' '.join(str(b) for b in base.DYNAMIC_BATCHES)})")
