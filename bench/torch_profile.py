"""torch.compile's kernels for one workload, each with its device time per call, to read beside sinter's
`SINTER_LOGS=profile` of the same definition (bench/run_cuda.sh's profile part runs both):

    python3 bench/torch_profile.py --only gpt_block [--train] [--way model|step] [--device cuda|cpu] [--calls N]

Without --train: the inference workload of bench/vs_torch.py under torch.compile (no_grad). With --train: the AdamW
training step of bench/vs_torch_train.py, the way given (default step: the whole step compiled). Prints
torch.profiler's table of kernels sorted by total device time, divided by the number of calls.
"""
import argparse
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", required=True, help="the workload (bench/WORKLOADS.md)")
    p.add_argument("--train", action="store_true", help="the training step instead of inference")
    p.add_argument("--way", default="step", choices=["model", "step"], help="how the training step is compiled")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--calls", type=int, default=20, help="calls profiled, after 5 warm-up calls")
    p.add_argument("--rows", type=int, default=40, help="table rows")
    args = p.parse_args()

    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import vs_torch
    cuda = args.device == "cuda"
    if args.train:
        import vs_torch_train
        trainer = vs_torch_train.Trainer(torch, vs_torch, args.only, args.way, cuda)
        call = trainer.step
        what = f"{args.only} training step ({args.way} way), {trainer.shape}"
    else:  # the GPU column's shapes and dtypes on CUDA (bench/vs_torch_cuda.py), the CPU column's elsewhere
        if cuda:
            import vs_torch_cuda
            fn, inputs, shape, *_ = vs_torch_cuda.make_workload(torch, args.only, vs_torch)
        else:
            fn, inputs, shape, _, _ = vs_torch.make_workload(torch, args.only)
        compiled = torch.compile(fn)

        def call():
            with torch.no_grad():
                out = compiled(*inputs)
            if cuda:
                torch.cuda.synchronize()
            return out
        what = f"{args.only} inference, {shape}"
    for _ in range(5):
        call()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(args.calls):
            call()
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    print(f"== torch.compile {what}: {args.calls} calls; the table's totals are over all of them")
    print(prof.key_averages().table(sort_by=key, row_limit=args.rows, max_name_column_width=70))


if __name__ == "__main__":
    main()
