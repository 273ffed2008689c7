#!/usr/bin/python3
"""gpt_torch.py — the PyTorch peer of lockstep's `gpt` model on the `text` task.

Builds the model `lockstep train --task text --file F` trains by default
(engine/models/seq/model_seq.c, engine/tasks/text.c, docs/models.md) in
PyTorch (Debian's python3-torch), trains it the same way and prints its
validation loss, so the two numbers can stand side by side:

  - data: F's first L - L//10 bytes train, the rest validates; a training
    sample is a window of T bytes at any offset (an epoch is a random
    permutation of the windows, B of them a step); validation windows start
    every T bytes (val_stride = context), (len - T - 1) // T + 1 of them;
  - model: token embedding [256][C], learned positions [T][C], n_layer
    pre-norm blocks x = x + attn(ln(x)); x = x + mlp(ln(x)) (attention with
    biased qkv and output projections, causal, H heads, scale 1/sqrt(C/H);
    mlp dense 4C, GELU tanh form, dense C), a last layernorm (eps 1e-5) and
    an untied head dense:256 with bias;
  - init: every matrix [R][N] (lockstep's layout: rows = fan-in for dense,
    the vocabulary or T for the tables) uniform in +-1/sqrt(R); biases 0,
    layernorm gains 1 and biases 0;
  - loss: cross-entropy at every position (position t < T-1 predicts byte
    t+1 of the window, T-1 the byte after it), the mean over positions and
    samples; the validation loss is that mean over every validation window,
    in nats per byte (bpb = loss / ln 2);
  - AdamW (beta 0.9, 0.999, eps 1e-8, weight decay 0), learning rate lr
    with a linear warmup over W steps from 0 and a cosine decay to lr_min
    at step D (lockstep's optim_lr_at: lr * t / W for t <= W, then
    lr_min + (lr - lr_min) * (1 + cos(pi * (t - W) / (D - W))) / 2).

The arithmetic is PyTorch's own (float32, its kernels and its random
numbers), so the figures agree in distribution, not in bits.

Usage: /usr/bin/python3 tools/bench/gpt_torch.py --file F [--steps 500]
       [--threads 2] [--seed 1] [--context 64] [--batch 32] ...
"""
import argparse
import math
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print("gpt_torch: %s: install the Debian packages python3-torch and python3-numpy (make deps)" % e,
          file=sys.stderr)
    sys.exit(2)


def uniform_(t, rows):
    with torch.no_grad():
        t.uniform_(-1.0, 1.0).mul_(1.0 / math.sqrt(rows))


class Dense(nn.Module):
    """y = x W + b with W stored [K][N] as lockstep stores it."""

    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.empty(k, n))
        self.b = nn.Parameter(torch.zeros(n))
        uniform_(self.w, k)

    def forward(self, x):
        return x @ self.w + self.b


class Block(nn.Module):
    def __init__(self, C, H, hidden):
        super().__init__()
        self.H = H
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = Dense(C, 3 * C)
        self.proj = Dense(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = Dense(C, hidden)
        self.out = Dense(hidden, C)

    def attn(self, x):
        B, T, C = x.shape
        hs = C // self.H
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (a.reshape(B, T, self.H, hs).transpose(1, 2) for a in (q, k, v))
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, T, C, H, n_layer, hidden, vocab=256):
        super().__init__()
        self.tok = nn.Parameter(torch.empty(vocab, C))
        self.pos = nn.Parameter(torch.empty(T, C))
        uniform_(self.tok, vocab)
        uniform_(self.pos, T)
        self.blocks = nn.ModuleList([Block(C, H, hidden) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(C, eps=1e-5)
        self.head = Dense(C, vocab)

    def forward(self, ids):
        x = self.tok[ids] + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def lr_at(a, t):
    if t <= a.warmup:
        return a.lr * t / a.warmup if a.warmup > 0 else a.lr
    if t >= a.decay_steps:
        return a.lr_min
    p = (t - a.warmup) / (a.decay_steps - a.warmup)
    return a.lr_min + (a.lr - a.lr_min) * (0.5 * (1.0 + math.cos(math.pi * p)))


def windows(data, T, stride):
    """Inputs [n][T] and targets [n][T] (the window shifted by one byte)."""
    n = (len(data) - T - 1) // stride + 1
    idx = np.arange(n)[:, None] * stride + np.arange(T)[None, :]
    return torch.from_numpy(data[idx].astype(np.int64)), torch.from_numpy(data[idx + 1].astype(np.int64))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", required=True)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--lr-min", type=float, default=0.0003)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--decay-steps", type=int, default=500)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    raw = np.frombuffer(open(a.file, "rb").read(), dtype=np.uint8)
    cut = len(raw) - len(raw) // 10
    T = a.context
    xtr, ytr = windows(raw[:cut], T, 1)
    xva, yva = windows(raw[cut:], T, T)
    model = GPT(T, a.width, a.heads, a.layers, a.hidden)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    t0 = time.time()
    perm, at = rng.permutation(len(xtr)), 0
    loss = float("nan")
    for step in range(1, a.steps + 1):
        if at + a.batch > len(perm):
            perm, at = np.concatenate([perm[at:], rng.permutation(len(xtr))]), 0
        ids = torch.from_numpy(perm[at:at + a.batch])
        at += a.batch
        for g in opt.param_groups:
            g["lr"] = lr_at(a, step)
        z = model(xtr[ids])
        l = F.cross_entropy(z.reshape(-1, 256), ytr[ids].reshape(-1))
        opt.zero_grad(set_to_none=True)
        l.backward()
        opt.step()
        loss = float(l)
    train_s = time.time() - t0
    model.eval()
    with torch.no_grad():
        total = 0.0
        for i in range(0, len(xva), 256):
            z = model(xva[i:i + 256])
            total += float(F.cross_entropy(z.reshape(-1, 256), yva[i:i + 256].reshape(-1), reduction="sum"))
        val = total / (len(xva) * T)
    print("gpt_torch: torch %s, %d threads, %d params, %d steps of %d windows of %d bytes, %.1f s" %
          (torch.__version__, a.threads, n_params, a.steps, a.batch, T, train_s))
    print("gpt_torch: final loss %.4f, test_loss %.4f, test_bpb %.4f (%d validation windows)" %
          (loss, val, val / math.log(2), len(xva)))


if __name__ == "__main__":
    main()
