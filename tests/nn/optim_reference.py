#!/usr/bin/env python3
"""Prints the PyTorch reference numbers of tests/nn/optim_test.cpp as C++ initializers.

Run: python3 tests/nn/optim_reference.py (needs torch; the test does not). The inputs are built from math.sin and
math.cos in float64, which the test computes with std::sin and std::cos (the same libm), then cast to the dtype.
"""
import math
import warnings

import torch

warnings.filterwarnings("ignore")
torch.set_printoptions(precision=17)


def values(n, f):
    return [f(i) for i in range(n)]


def init_p1():  # [2, 3]
    return values(6, lambda i: (i - 2.5) * 0.3)


def init_p2():  # [4]
    return values(4, lambda i: 0.25 * i + 0.1)


def grad_p1(k):
    return values(6, lambda i: math.sin(0.7 * i + k) / (k + 1))


def grad_p2(k):
    return values(4, lambda i: math.cos(1.3 * i + 0.5 * k) / (k + 1))


def make_params(dtype):
    p1 = torch.tensor(init_p1(), dtype=torch.float64).to(dtype).reshape(2, 3).requires_grad_()
    p2 = torch.tensor(init_p2(), dtype=torch.float64).to(dtype).requires_grad_()
    return p1, p2


# name -> (optimizer class, params -> constructor argument, kwargs). Kept in step with make_optimizer in the test.
CASES = {
    "sgd_plain": (torch.optim.SGD, None, dict(lr=0.1)),
    "sgd_momentum": (torch.optim.SGD, None, dict(lr=0.1, momentum=0.9, dampening=0.1)),
    "sgd_nesterov": (torch.optim.SGD, None, dict(lr=0.1, momentum=0.9, nesterov=True)),
    "sgd_weight_decay": (torch.optim.SGD, None, dict(lr=0.1, momentum=0.5, weight_decay=0.01)),
    "sgd_maximize": (torch.optim.SGD, None, dict(lr=0.1, momentum=0.9, maximize=True)),
    "sgd_groups": (torch.optim.SGD, lambda p1, p2: [{"params": [p1]}, {"params": [p2], "lr": 0.01}],
                   dict(lr=0.1, momentum=0.9)),
    "adam": (torch.optim.Adam, None, dict(lr=0.01)),
    "adam_weight_decay": (torch.optim.Adam, None, dict(lr=0.01, weight_decay=0.1)),
    "adam_amsgrad": (torch.optim.Adam, None, dict(lr=0.01, betas=(0.8, 0.99), amsgrad=True)),
    "adam_maximize": (torch.optim.Adam, None, dict(lr=0.01, maximize=True, eps=1e-6)),
    "adam_groups": (torch.optim.Adam, lambda p1, p2: [{"params": [p1]}, {"params": [p2], "lr": 0.05}],
                    dict(lr=0.01)),
    "adamw": (torch.optim.AdamW, None, dict(lr=0.01)),
    "adamw_amsgrad": (torch.optim.AdamW, None, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
}
STEPS = 5


def cpp_list(t):
    return "{" + ", ".join(repr(float(v)) for v in t.detach().reshape(-1).tolist()) + "}"


def run_optimizers():
    print("// Parameters after 5 steps: {name, float32 p1, float32 p2, float64 p1, float64 p2}.")
    print("const std::vector<OptimCase> kOptimCases = {")
    for name, (cls, groups, kwargs) in CASES.items():
        out = []
        for dtype in (torch.float32, torch.float64):
            p1, p2 = make_params(dtype)
            params = groups(p1, p2) if groups else [p1, p2]
            opt = cls(params, foreach=False, **kwargs)
            for k in range(STEPS):
                p1.grad = torch.tensor(grad_p1(k), dtype=torch.float64).to(dtype).reshape(2, 3)
                p2.grad = torch.tensor(grad_p2(k), dtype=torch.float64).to(dtype)
                opt.step()
            out += [cpp_list(p1), cpp_list(p2)]
        print(f'    {{"{name}",\n     ' + ",\n     ".join(out) + "},")
    print("};")


def scheduler_optimizer():
    p = torch.zeros(1, requires_grad=True)
    q = torch.zeros(1, requires_grad=True)
    return torch.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.05}], lr=0.1)


def run_schedulers():
    S = torch.optim.lr_scheduler
    makers = {
        "step": lambda o: S.StepLR(o, step_size=3, gamma=0.5),
        "cosine": lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
        "linear": lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4),
        "linear_default": lambda o: S.LinearLR(o),
        "lambda": lambda o: S.LambdaLR(o, lambda e: 0.9**e),
        "lambda_per_group": lambda o: S.LambdaLR(o, [lambda e: 0.9**e, lambda e: 1.0 / (e + 1)]),
        "sequential_warmup_cosine": lambda o: S.SequentialLR(
            o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=6)], milestones=[3]),
        "sequential_three": lambda o: S.SequentialLR(
            o, [S.LinearLR(o, start_factor=0.5, total_iters=2), S.StepLR(o, step_size=2, gamma=0.5),
                S.LambdaLR(o, lambda e: 0.8**e)], milestones=[2, 6]),
    }
    print("// get_last_lr() of both groups (lr 0.1 and 0.05) after construction and after each of 12 steps.")
    print("const std::vector<SchedulerCase> kSchedulerCases = {")
    for name, make in makers.items():
        opt = scheduler_optimizer()
        sched = make(opt)
        seq = [sched.get_last_lr()]
        for _ in range(12):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        rows = ", ".join("{" + ", ".join(repr(float(v)) for v in lrs) + "}" for lrs in seq)
        print(f'    {{"{name}", {{{rows}}}}},')
    print("};")


def run_clip():
    def grads():
        g1 = torch.tensor(grad_p1(0), dtype=torch.float64).to(torch.float32).reshape(2, 3)
        g2 = torch.tensor(grad_p2(0), dtype=torch.float64)
        p1 = torch.zeros(2, 3, requires_grad=True)
        p2 = torch.zeros(4, dtype=torch.float64, requires_grad=True)
        p3 = torch.zeros(5, requires_grad=True)  # no gradient
        p1.grad, p2.grad = g1, g2
        return p1, p2, p3

    print("// clip_grad_norm_ over a float32 [2, 3] and a float64 [4] gradient (those of step 0) and a parameter")
    print("// without one: {max_norm, norm_type, total norm, clipped float32 grad, clipped float64 grad}.")
    print("const std::vector<ClipCase> kClipCases = {")
    for max_norm, norm_type in ((1.0, 2.0), (0.5, math.inf), (0.8, 1.0), (100.0, 2.0)):
        p1, p2, p3 = grads()
        total = torch.nn.utils.clip_grad_norm_([p1, p2, p3], max_norm, norm_type=norm_type, foreach=False)
        nt = "kInf" if math.isinf(norm_type) else repr(norm_type)
        print(f"    {{{max_norm!r}, {nt}, {float(total)!r}, {cpp_list(p1.grad)}, {cpp_list(p2.grad)}}},")
    print("};")
    p1, p2, p3 = grads()
    torch.nn.utils.clip_grad_value_([p1, p2, p3], 0.3, foreach=False)
    print("// clip_grad_value_(0.3) of the same gradients.")
    print(f"const std::vector<double> kClipValue1 = {cpp_list(p1.grad)};")
    print(f"const std::vector<double> kClipValue2 = {cpp_list(p2.grad)};")


if __name__ == "__main__":
    print(f"// torch {torch.__version__}")
    run_optimizers()
    run_schedulers()
    run_clip()
