"""The model zoo of `sinter bench --suite models`: small versions of the architectures people run on a CPU, built
in PyTorch with random seeded weights (no downloads), exported to ONNX with a symbolic batch dimension.

Each entry: a module factory, its example inputs at batch B, and how the bench makes inputs (`inputs`: name,
dtype, shape with "batch", and for integer inputs the range). The sizes are chosen so that one call takes
milliseconds on two cores, as in the measurements that motivated the zoo (d_model 256, 64 tokens).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SEQ = 64
VOCAB = 2048


def tanh_gelu(x):
    # GPT-2's activation as its implementations write it (and as it reaches ONNX): pow, tanh, the constants.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class SelfAttention(nn.Module):
    """Multi-head attention written out (matmul, scale, mask, softmax, matmul), as exported models carry it.
    kv_heads < heads is grouped-query attention; rotary applies rotary position embeddings to q and k."""

    def __init__(self, d, heads, kv_heads=None, bias=True, rotary=False, fused_qkv=False):
        super().__init__()
        self.d, self.heads, self.kv_heads = d, heads, kv_heads or heads
        self.hd = d // heads
        self.fused_qkv = fused_qkv
        if fused_qkv:
            self.qkv = nn.Linear(d, 3 * d, bias=bias)
        else:
            self.q = nn.Linear(d, d, bias=bias)
            self.k = nn.Linear(d, self.kv_heads * self.hd, bias=bias)
            self.v = nn.Linear(d, self.kv_heads * self.hd, bias=bias)
        self.o = nn.Linear(d, d, bias=bias)
        self.rotary = rotary
        if rotary:
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
            freqs = torch.outer(torch.arange(SEQ).float(), inv)
            emb = torch.cat([freqs, freqs], dim=-1)
            self.register_buffer("cos", emb.cos(), persistent=False)
            self.register_buffer("sin", emb.sin(), persistent=False)

    @staticmethod
    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([-x2, x1], dim=-1)

    def forward(self, x, mask):
        b, t, _ = x.shape
        if self.fused_qkv:
            q, k, v = self.qkv(x).split(self.d, dim=-1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q = q.view(b, t, self.heads, self.hd).transpose(1, 2)
        k = k.view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = v.view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        if self.rotary:
            cos, sin = self.cos[:t], self.sin[:t]
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        if mask is not None:
            s = s + mask
        p = torch.softmax(s, dim=-1)
        y = torch.matmul(p, v).transpose(1, 2).reshape(b, t, self.d)
        return self.o(y)


def causal_mask(t):
    return torch.triu(torch.full((t, t), float("-inf")), diagonal=1)


class GPT2(nn.Module):
    def __init__(self, d=256, heads=4, layers=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, d), nn.Embedding(SEQ, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            blk = nn.Module()
            blk.ln1, blk.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            blk.attn = SelfAttention(d, heads, fused_qkv=True)
            blk.fc, blk.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.blocks.append(blk)
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("mask", causal_mask(SEQ), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        for blk in self.blocks:
            x = x + blk.attn(blk.ln1(x), self.mask[:t, :t])
            x = x + blk.proj(tanh_gelu(blk.fc(blk.ln2(x))))
        return torch.matmul(self.ln_f(x), self.wte.weight.t())


class Bert(nn.Module):
    def __init__(self, d=256, heads=4, layers=2):
        super().__init__()
        self.tok, self.pos, self.typ = nn.Embedding(VOCAB, d), nn.Embedding(SEQ, d), nn.Embedding(2, d)
        self.ln_e = nn.LayerNorm(d, eps=1e-12)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            blk = nn.Module()
            blk.attn = SelfAttention(d, heads)
            blk.ln1, blk.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
            blk.fc, blk.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.blocks.append(blk)
        self.pool = nn.Linear(d, d)

    def forward(self, ids, attention_mask):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t)) + self.typ(torch.zeros_like(ids))
        x = self.ln_e(x)
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for blk in self.blocks:  # post-LN, erf gelu
            x = blk.ln1(x + blk.attn(x, mask))
            x = blk.ln2(x + blk.proj(F.gelu(blk.fc(x))))
        return x, torch.tanh(self.pool(x[:, 0]))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Llama(nn.Module):
    def __init__(self, d=256, heads=8, kv_heads=2, hidden=688, layers=2):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            blk = nn.Module()
            blk.n1, blk.n2 = RMSNorm(d), RMSNorm(d)
            blk.attn = SelfAttention(d, heads, kv_heads, bias=False, rotary=True)
            blk.gate, blk.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
            blk.down = nn.Linear(hidden, d, bias=False)
            self.blocks.append(blk)
        self.norm, self.head = RMSNorm(d), nn.Linear(d, VOCAB, bias=False)
        self.register_buffer("mask", causal_mask(SEQ), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.emb(ids)
        for blk in self.blocks:
            x = x + blk.attn(blk.n1(x), self.mask[:t, :t])
            h = blk.n2(x)
            x = x + blk.down(F.silu(blk.gate(h)) * blk.up(h))
        return self.head(self.norm(x))


class ViT(nn.Module):
    def __init__(self, image=64, patch=8, d=256, heads=4, layers=2, classes=100):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        n = (image // patch) ** 2
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n + 1, d))
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            blk = nn.Module()
            blk.ln1, blk.ln2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
            blk.attn = SelfAttention(d, heads, fused_qkv=True)
            blk.fc, blk.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.blocks.append(blk)
        self.ln, self.head = nn.LayerNorm(d, eps=1e-6), nn.Linear(d, classes)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for blk in self.blocks:  # pre-LN, erf gelu
            x = x + blk.attn(blk.ln1(x), None)
            x = x + blk.proj(F.gelu(blk.fc(blk.ln2(x))))
        return self.head(self.ln(x)[:, 0])


def dw_separable(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(),
        nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6())


class DWSepCNN(nn.Module):
    """MobileNet-v1-style: a stem and depthwise-separable blocks, global pooling, a classifier."""

    def __init__(self, classes=100):
        super().__init__()
        chans = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)]
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6())
        self.body = nn.Sequential(*[dw_separable(a, b, s) for a, b, s in chans])
        self.head = nn.Linear(512, classes)

    def forward(self, x):
        return self.head(self.body(self.stem(x)).mean((2, 3)))


def randomise_batchnorm(model):
    # Random running statistics, so that folded batch norms are not identities.
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(0.1 * torch.randn(m.num_features, generator=g))
            m.running_var.copy_(0.5 + torch.rand(m.num_features, generator=g))
    return model


def torchvision_model(name):
    import torchvision
    return randomise_batchnorm(getattr(torchvision.models, name)(weights=None))


def ids_input(name="ids"):
    return {"name": name, "dtype": "int64", "shape": ["batch", SEQ], "low": 0, "high": VOCAB}


def image_input(size):
    return {"name": "images", "dtype": "float32", "shape": ["batch", 3, size, size]}


# name -> (factory, inputs, what it is)
ZOO = {
    "gpt2": (GPT2, [ids_input()], "GPT-2-style decoder: 2 layers, d 256, 4 heads, tanh gelu, 64 tokens"),
    "bert": (Bert, [ids_input(), {"name": "attention_mask", "dtype": "int64", "shape": ["batch", SEQ], "low": 1,
                                  "high": 2}],
             "BERT-style encoder: 2 post-LN layers, d 256, erf gelu, additive mask, pooler"),
    "llama": (Llama, [ids_input()],
              "Llama-style decoder: 2 layers, d 256, RMSNorm, rotary, GQA 8/2 heads, SiLU-gated MLP 688"),
    "vit": (ViT, [image_input(64)], "ViT-style: 64x64 image, 8x8 patches, 2 pre-LN layers, d 256, erf gelu"),
    "dwsep_cnn": (lambda: randomise_batchnorm(DWSepCNN()), [image_input(128)],
                  "depthwise-separable CNN (MobileNet-v1-style), 128x128, batch norm, relu6"),
    "mobilenet_v3_small": (lambda: torchvision_model("mobilenet_v3_small"), [image_input(224)],
                           "torchvision MobileNetV3-small, 224x224 (hardswish, squeeze-and-excitation)"),
    "resnet50": (lambda: torchvision_model("resnet50"), [image_input(224)], "torchvision ResNet-50, 224x224"),
}


def example_inputs(spec, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for inp in spec:
        shape = [batch if d == "batch" else d for d in inp["shape"]]
        if inp["dtype"] == "int64":
            out.append(torch.randint(inp["low"], inp["high"], shape, generator=g))
        else:
            out.append(torch.randn(shape, generator=g))
    return out
