"""The training steps of bench/WORKLOADS.md ("Training steps") in PyTorch, for `bench/vs_torch.py --train`: one
AdamW step (zero_grad, forward, mean(out**2), backward, step) of mlp, gpt_block and resnet_block, eager and
compiled the two ways sinter's `bench --suite train` measures:
    model: torch.compile(model), backward and the optimizer step eager;
    step:  torch.compile(train_step) (Dynamo compiles the forward with its backward, and the optimizer step).
Timed alternately with eager (medians). Compile seconds and peak resident memory come from child processes, as
sinter's: the first step's wall time minus a steady step's, on an empty TORCHINDUCTOR_CACHE_DIR (cold) and again
on the same directory (warm); the process's peak RSS over steady steps (VmHWM after clear_refs) above what it had
before the model was made.
"""
import os
import subprocess
import sys
import tempfile
import time

MODELS = ["mlp", "gpt_block", "resnet_block"]
WAYS = ["model", "step"]


def make_model(torch, base, name, cuda=False):
    """(model, input, shape text) at the training shapes (on CUDA the GPU shapes; the forward and loss then run under
    bfloat16 autocast); base is vs_torch (GptBlock, ResNetBlock)."""
    nn = torch.nn
    torch.manual_seed(1234)
    if cuda:
        if name == "mlp":
            return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda(), \
                torch.randn(8192, 1024, device="cuda"), "T8192 D1024 H4096 bf16 autocast"
        if name == "gpt_block":
            return base.GptBlock(torch, 1024, 16).cuda(), torch.randn(8, 1024, 1024, device="cuda"), \
                "B8 S1024 D1024 H16 bf16 autocast"
        if name == "resnet_block":
            x = torch.randn(32, 64, 56, 56, device="cuda").contiguous(memory_format=torch.channels_last)
            return base.ResNetBlock(torch, 64).cuda(), x, "N32 C64 56x56 NHWC bf16 autocast"
        raise SystemExit(f"no GPU training shape for {name}")
    if name == "mlp":
        return nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)), torch.randn(256, 512), \
            "T256 D512 H2048"
    if name == "gpt_block":
        return base.GptBlock(torch, 256, 4), torch.randn(2, 128, 256), "B2 S128 D256 H4"
    if name == "resnet_block":
        return base.ResNetBlock(torch, 32), torch.randn(4, 32, 28, 28), "N4 C32 28x28 NCHW"
    raise SystemExit(f"unknown model {name}")


class Trainer:
    def __init__(self, torch, base, name, way, cuda=False):
        self.model, self.x, self.shape = make_model(torch, base, name, cuda)
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        model, opt = self.model, self.opt

        def one_step(forward, x):
            opt.zero_grad()
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda):
                out = forward(x)
                loss = (out * out).mean()
            loss.backward()
            opt.step()
            return loss.detach()
        if way == "eager":
            self.step = lambda: one_step(model, self.x)
        elif way == "model":
            compiled = torch.compile(model)
            self.step = lambda: one_step(compiled, self.x)
        elif way == "step":
            compiled = torch.compile(lambda x: one_step(model, x))
            self.step = lambda: compiled(self.x)
        else:
            raise SystemExit(f"unknown way {way}")
        if cuda:
            step = self.step

            def synced():
                loss = step()
                torch.cuda.synchronize()
                return loss
            self.step = synced


def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return float(line.split()[1]) / 1024
    return float("nan")


def probe(torch, base, spec, cuda=False):
    """The child: compile seconds and peak RSS of one model and way ("mlp:step")."""
    name, way = spec.split(":")
    rss_before = status_mb("VmRSS")
    t = Trainer(torch, base, name, way, cuda)
    start = time.perf_counter()
    t.step()
    first = time.perf_counter() - start
    steady = base.time_ms(t.step, 3, 1) / 1e3
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    for _ in range(3):
        t.step()
    print(f"probe compile_s={max(first - steady, 0.0):.6f} peak_rss_mb={status_mb('VmHWM') - rss_before:.3f}")


def run_probe(spec, args, cache_dir):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vs_torch.py"), "--train",
           "--probe", spec, "--threads", str(args.threads), "--device", args.device]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("probe compile_s="):
            fields = dict(f.split("=") for f in line.split()[1:] if "=" in f)
            return float(line.split()[1].split("=")[1]), float(fields.get("peak_rss_mb", "nan"))
    print(f"  probe {spec} failed (status {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}", file=sys.stderr)
    return None, None


def peak_cuda_mb(torch, step):
    """The device's allocator peak during one step above what was allocated before, in MB."""
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def run(torch, args, base):
    budget = 300 if args.quick else 2000
    cuda = args.device == "cuda"
    rows = []
    for name in MODELS:
        if args.only and args.only != name:
            continue
        eager_rss = None
        for way in WAYS:
            print(f"  {name} / {way} ...", flush=True)
            eager, compiled = Trainer(torch, base, name, "eager", cuda), Trainer(torch, base, name, way, cuda)
            start = time.perf_counter()
            lc = compiled.step()
            first_ms = (time.perf_counter() - start) * 1e3
            le = eager.step()
            for _ in range(2):
                le, lc = eager.step(), compiled.step()
            err = abs(float(lc) - float(le)) / max(abs(float(le)), 1e-30)
            eager_ms, compiled_ms = base.time_pair_ms(eager.step, compiled.step, budget)
            row = {"model": name, "way": way, "backend": "torch.compile", "shape": eager.shape,
                   "eager_ms": eager_ms, "compiled_ms": compiled_ms, "speedup": eager_ms / compiled_ms,
                   "first_step_ms": first_ms, "loss_rel_err": err}
            if cuda:
                row["peak_mb_eager"], row["peak_mb_compiled"] = peak_cuda_mb(torch, eager.step), \
                    peak_cuda_mb(torch, compiled.step)
            if not args.no_probe:
                with tempfile.TemporaryDirectory(prefix="torch-bench-train-") as d:
                    row["compile_s_cold"], row["peak_rss_mb_compiled"] = run_probe(f"{name}:{way}", args, d)
                    row["compile_s_warm"], _ = run_probe(f"{name}:{way}", args, d)
                    if eager_rss is None:
                        _, eager_rss = run_probe(f"{name}:eager", args, d)
                row["peak_rss_mb_eager"] = eager_rss
            rows.append(row)
    return rows


def print_tables(rows, sinter, base):
    f = base.fmt
    print(f"\n{'model':<13} {'way':<6} {'eager ms':>9} {'t.compile ms':>12} {'speedup':>8} {'cold s':>8} "
          f"{'warm s':>8} {'RSS MB e':>9} {'RSS MB c':>9} {'loss err':>9}")
    for r in rows:
        print(f"{r['model']:<13} {r['way']:<6} {f(r['eager_ms']):>9} {f(r['compiled_ms']):>12} "
              f"{f(r['speedup'], '.2f') + 'x':>8} {f(r.get('compile_s_cold')):>8} {f(r.get('compile_s_warm')):>8} "
              f"{f(r.get('peak_rss_mb_eager'), '.1f'):>9} {f(r.get('peak_rss_mb_compiled'), '.1f'):>9} "
              f"{f(r.get('loss_rel_err'), '.1e'):>9}")
    if not sinter:
        return
    by_key = {(r["model"], r["way"]): r for r in rows}
    print(f"\nsinter ({sinter.get('sinter_commit', '?')}) over PyTorch, same way (below 1: sinter faster or smaller)")
    print(f"{'model':<13} {'way':<6} {'sinter ms':>10} {'t.compile ms':>12} {'step s/t':>9} {'eager s/t':>10} "
          f"{'cold s/t':>9} {'warm s/t':>9} {'mem s/t':>8}")
    for s in sinter.get("results", []):
        t = by_key.get((s.get("model"), s.get("way")))
        if t is None or s.get("error"):
            continue
        r = base.ratio
        # Memory: the device allocators' peaks on CUDA, the processes' peak RSS on the CPU.
        mem = "peak_mb_compiled" if s.get("peak_mb_compiled") is not None and t.get("peak_mb_compiled") is not None \
            and sinter.get("device") == "cuda" else "peak_rss_mb_compiled"
        print(f"{s['model']:<13} {s['way']:<6} {f(s.get('compiled_ms')):>10} {f(t['compiled_ms']):>12} "
              f"{f(r(s.get('compiled_ms'), t['compiled_ms']), '.3g'):>9} "
              f"{f(r(s.get('eager_ms'), t['eager_ms']), '.3g'):>10} "
              f"{f(r(s.get('compile_s_cold'), t.get('compile_s_cold')), '.3g'):>9} "
              f"{f(r(s.get('compile_s_warm'), t.get('compile_s_warm')), '.3g'):>9} "
              f"{f(r(s.get(mem), t.get(mem)), '.3g'):>8}")
