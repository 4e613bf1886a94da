"""PyTorch's output layouts for the cases tests/ops/pointwise_test.cpp (PointwiseLayout) and
tests/passes/functionalize_test.cpp expect of sinter's layout rule (layout_of_operands in src/ops/shape_util.cpp).
Prints each case's strides beside the expected ones and exits non-zero on a difference. Needs PyTorch:
    python3 scripts/torch_layout_check.py
"""
import sys

import torch

x = torch.randn(4, 2, 2)[::2]  # strides (8, 2, 1), not dense
p = x.permute(2, 1, 0)          # strides (1, 2, 8)
t = torch.randn(3, 4).t()       # sizes (4, 3), strides (1, 4)
cl = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
c = torch.randn(2, 3, 4, 5)
y = torch.randn(4, 2, 2)[::2]
y.relu_()
s = (torch.randn(4, 6) * 2).transpose(0, 1)[2:]  # sizes (4, 4), strides (1, 6), offset 2

cases = [
    ("relu(x)", torch.relu(x), (4, 2, 1)),
    ("exp(p)", torch.exp(p), (1, 2, 4)),
    ("logical_or(p, x)", torch.logical_or(p, x), (1, 2, 4)),
    ("add(x, p)", torch.add(x, p), (4, 2, 1)),
    ("mul(p, 2.0)", torch.mul(p, 2.0), (1, 2, 4)),
    ("add(randn(3), t)", torch.add(torch.randn(3), t), (1, 4)),
    ("add(t, randn(4, 1))", torch.add(t, torch.randn(4, 1)), (1, 4)),
    ("add(cl, c)", torch.add(cl, c), cl.stride()),
    ("add(c, cl)", torch.add(c, cl), c.stride()),
    ("logical_or(y.permute, y) after relu_", torch.logical_or(y.permute(2, 1, 0), y), (1, 2, 4)),
    ("neg of a transposed slice", torch.neg(s), (1, 4)),
]
bad = 0
for name, out, want in cases:
    ok = tuple(out.stride()) == tuple(want)
    bad += not ok
    print(f"{'ok  ' if ok else 'DIFF'} {name}: torch {tuple(out.stride())}, sinter expects {tuple(want)}")
print(f"torch {torch.__version__}: {len(cases) - bad} of {len(cases)} as sinter expects")
sys.exit(1 if bad else 0)
