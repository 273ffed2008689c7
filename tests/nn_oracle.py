#!/usr/bin/python3
"""nn_oracle.py — the Python half of the layers' oracle (tests/test_nn_oracle.sh).

Reads the cases tests/nn_oracle.c wrote into DIR (manifest.txt and .npy
files), recomputes every layer's output and gradients with PyTorch autograd
in float64 from the same binary32 inputs, and compares. One cmocka-style
"[       OK ] name" or "[  FAILED  ] name" line per case; exit 1 on any
failure, 2 when PyTorch or NumPy is missing (naming the Debian package).

The bound. Every output element of a layer is a chain of at most L binary32
roundings (L: the length of its longest sum, written by nn_oracle.c per
case; the binary64 parts — softmax, norm statistics — round far below).
The classic bound for a recursive sum or dot product of L terms is
|error| <= L * u * sum|terms| with u = 2^-24. We measure
    rel = max|ours - torch| / (max|torch| + 1e-30)
per array, and the sum of |terms| of an element can exceed the array's
largest value by cancellation (on these random inputs by a few times at
most; the largest ratio measured here is below 1), hence the margin of 4:
the check is rel <= 4 * L * 2^-24. A wrong
formula, index or transposition gives rel of order 1, five or more orders
above the bound even for the largest L here; the ratio rel / (L * 2^-24)
is printed for every array of a failed case, and the largest over all
cases closes the output, so a drifting path shows before it fails.
"""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("[  FAILED  ] nn_oracle: NumPy is missing: install the Debian package python3-numpy (make deps)")
    sys.exit(2)
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("[  FAILED  ] nn_oracle: PyTorch is missing: install the Debian package python3-torch (make deps)")
    sys.exit(2)

U = 2.0 ** -24
MARGIN = 4.0
WORST = [0.0, ""]   # the largest ratio seen and where
torch.set_default_dtype(torch.float64)
DIR = sys.argv[1]

DENSE, CONV2D, MAXPOOL, AVGPOOL, LAYERNORM, EMBED, POSEMBED, ATTN, GELU, RELU, ADD, DROPOUT, XENT = range(1, 14)


def load(name, what):
    return np.load(os.path.join(DIR, "%s.%s.npy" % (name, what)))


def t64(a, grad=False):
    t = torch.tensor(np.asarray(a, dtype=np.float64))
    t.requires_grad_(grad)
    return t


def parse(line):
    f = line.split()
    c = dict(name=f[0], kind=int(f[1]), n=int(f[2]), in0=int(f[3]), in1=int(f[4]), in2=int(f[5]),
             units=int(f[6]), vocab=int(f[7]), k=int(f[8]), same=int(f[9]), bias=int(f[10]),
             heads=int(f[11]), eps=float(f[12]), p=float(f[13]), L=int(f[14]), tensors={})
    if f[15] != "-":
        for spec in f[15].split(","):
            tname, off, d0, d1 = spec.split(":")
            shape = (int(d0),) if int(d1) == 0 else (int(d0), int(d1))
            c["tensors"][tname] = (int(off), shape)
    return c


def params(c, w):
    """The layer's tensors as float64 leaves, by name, from its flat block."""
    out = {}
    for tname, (off, shape) in c["tensors"].items():
        count = int(np.prod(shape))
        out[tname] = t64(w[off:off + count].reshape(shape), True)
    return out


def forward(c, x, p):
    n, H, W, C = c["n"], c["in0"], c["in1"], c["in2"]
    k = c["kind"]
    if k == DENSE:
        y = x.reshape(n, H, C) @ p["w"]
        return y + p["b"] if "b" in p else y
    if k == CONV2D:
        kk, O = c["k"], c["units"]
        xc = x.reshape(n, H, W, C).permute(0, 3, 1, 2)
        wt = p["w"].reshape(kk, kk, C, O).permute(3, 2, 0, 1)
        y = F.conv2d(xc, wt, p.get("b"), padding=(kk - 1) // 2 if c["same"] else 0)
        return y.permute(0, 2, 3, 1)
    if k in (MAXPOOL, AVGPOOL):
        xc = x.reshape(n, H, W, C).permute(0, 3, 1, 2)
        pool = F.max_pool2d if k == MAXPOOL else F.avg_pool2d
        return pool(xc, c["k"]).permute(0, 2, 3, 1)
    if k == LAYERNORM:
        return F.layer_norm(x.reshape(n, H, W, C), (C,), p["gain"], p["bias"], c["eps"])
    if k == POSEMBED:
        return x.reshape(n, H, C) + p["table"]
    if k == ATTN:
        T, nh = H, c["heads"]
        hs = C // nh
        qkv = x.reshape(n, T, C) @ p["wqkv"] + p["bqkv"]
        q, kv, v = qkv.split(C, dim=2)
        q, kv, v = (a.reshape(n, T, nh, hs).transpose(1, 2) for a in (q, kv, v))
        s = q @ kv.transpose(-2, -1) / np.sqrt(hs)
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
        o = (att @ v).transpose(1, 2).reshape(n, T, C)
        return o @ p["wo"] + p["bo"]
    if k == GELU:
        return F.gelu(x, approximate="tanh")
    if k == RELU:
        return torch.relu(x)
    raise ValueError("kind %d" % k)


class Case:
    def __init__(self, c):
        self.c, self.fails, self.notes = c, [], []

    def cmp(self, what, ours, ref, L=None):
        L = L or self.c["L"]
        ours = np.asarray(ours, dtype=np.float64).reshape(-1)
        ref = ref.detach().numpy().reshape(-1) if torch.is_tensor(ref) else np.asarray(ref, dtype=np.float64).reshape(-1)
        if ours.shape != ref.shape:
            self.fails.append("%s: %d values, torch has %d" % (what, ours.size, ref.size))
            return
        if not np.all(np.isfinite(ours)):
            self.fails.append("%s: not finite" % what)
            return
        rel = float(np.max(np.abs(ours - ref))) / (float(np.max(np.abs(ref))) + 1e-30) if ref.size else 0.0
        ratio = rel / (L * U)
        self.notes.append("%s %.2f" % (what, ratio))
        if ratio > WORST[0]:
            WORST[0], WORST[1] = ratio, "%s %s" % (self.c["name"], what)
        if ratio > MARGIN:
            self.fails.append("%s: max rel error %.3g > %g * %d * 2^-24 (ratio %.1f)" % (what, rel, MARGIN, L, ratio))


def run(c):
    case = Case(c)
    name, k = c["name"], c["kind"]
    if k == EMBED:
        ids = torch.tensor(load(name, "ids").astype(np.int64))
        table = t64(load(name, "w").reshape(c["vocab"], c["units"]), True)
        y = table[ids]
        dy = t64(load(name, "dy")).reshape(y.shape)
        (y * dy).sum().backward()
        case.cmp("y", load(name, "y"), y, 1)
        case.cmp("dtable", load(name, "dw"), table.grad)
    elif k == XENT:
        ids = torch.tensor(load(name, "ids").astype(np.int64))
        z = t64(load(name, "x").reshape(-1, c["in2"]), True)
        loss = F.cross_entropy(z, ids, reduction="sum")
        loss.backward()
        case.cmp("loss", load(name, "y"), loss.reshape(1))
        case.cmp("dz", load(name, "dx"), z.grad)
    elif k == ADD:
        x, x2, dy = (t64(load(name, w), True) for w in ("x", "x2", "dy"))
        y = x + x2
        (y * dy).sum().backward()
        case.cmp("y", load(name, "y"), y)
        case.cmp("dx", load(name, "dx"), x.grad)
        case.cmp("dx2", load(name, "dx2"), x2.grad)
    elif k == DROPOUT:
        x, dy = t64(load(name, "x"), True), t64(load(name, "dy"))
        mask = t64(load(name, "mask"))
        keep = float(mask.mean())
        if not (abs(keep - (1 - c["p"])) < 0.15):
            case.fails.append("mask keeps %.3f of the elements, 1 - p = %.3f" % (keep, 1 - c["p"]))
        y = x * mask / (1 - c["p"])
        (y * dy).sum().backward()
        case.cmp("y", load(name, "y"), y)
        case.cmp("dx", load(name, "dx"), x.grad)
    else:
        x = t64(load(name, "x"), True)
        p = params(c, load(name, "w"))
        y = forward(c, x, p)
        dy = t64(load(name, "dy")).reshape(y.shape)
        (y * dy).sum().backward()
        case.cmp("y", load(name, "y"), y)
        case.cmp("dx", load(name, "dx"), x.grad)
        for tname, t in p.items():
            case.cmp("d" + tname, load(name, "dw")[c["tensors"][tname][0]:][:t.numel()], t.grad)
    return case


def unroll(text):
    """seq.h's grammar unrolled: [(token, skip)], a residual's add as
    ("res", index of its branch's first layer), repeats written out."""
    out, at = [], [0]

    def items(close):
        while True:
            rest = text[at[0]:]
            if rest.startswith("res("):
                at[0] += 4
                first = len(out)
                items(")")
                out.append(("res", first))
            elif "x[" in rest and rest[:rest.index("x[")].isdigit():
                k = rest.index("x[")
                times = int(rest[:k])
                at[0] += k + 2
                first = len(out)
                items("]")
                body = out[first:]
                for r in range(1, times):
                    out.extend((t, sk + r * len(body)) for t, sk in body)
            else:
                end = at[0]
                while end < len(text) and text[end] not in ",)]":
                    end += 1
                out.append((text[at[0]:end], 0))
                at[0] = end
            c = text[at[0]] if at[0] < len(text) else ""
            at[0] += 1
            if c == ",":
                continue
            if c != close:
                raise ValueError("layers: '%s' where '%s' was expected" % (c, close))
            return

    items("")
    return out


class Masks:
    """The keep masks seq_leaf drew (nn_oracle.c writes them, [n][input] per
    dropout layer in layer order): dropout as PyTorch computes it in
    training, the input times the mask times 1/(1-p), with p the binary32
    value of the declared P (strtof's, the engine's)."""

    def __init__(self, name):
        path = os.path.join(DIR, "%s.mask.npy" % name)
        self.mask = np.load(path).astype(np.float64) if os.path.exists(path) else np.zeros(0)
        self.used, self.expected = 0, 0.0

    def apply(self, tok, x):
        p = float(np.float32(tok[len("dropout:"):]))
        count = x.numel()
        if self.used + count > self.mask.size:
            raise ValueError("%s: the masks hold %d values, the network needs more" % (tok, self.mask.size))
        m = t64(self.mask[self.used:self.used + count]).reshape(x.shape)
        self.used += count
        self.expected += (1 - p) * count
        return x * m / (1 - p)

    def check(self, case):
        if self.used != self.mask.size:
            case.fails.append("the masks hold %d values, the network's dropout layers read %d"
                              % (self.mask.size, self.used))
        elif self.used:
            keep, want = float(self.mask.sum()) / self.used, self.expected / self.used
            if not abs(keep - want) < 0.15:
                case.fails.append("the masks keep %.3f of the elements, the p's say %.3f" % (keep, want))


def token_forward(layers, ids, p, masks):
    """A token network (seq.h): ids [n][T] -> logits [n][T][classes]."""
    inputs = []
    x = None
    for i, (tok, skip) in enumerate(layers, start=1):
        inputs.append(x)
        w, b = p.get("%d.w" % i), p.get("%d.b" % i)
        if tok.startswith("embed:"):
            x = p["%d.table" % i][ids]
        elif tok == "posembed":
            x = x + p["%d.table" % i]
        elif tok == "layernorm":
            x = F.layer_norm(x, (x.shape[-1],), p["%d.gain" % i], p["%d.bias" % i], 1e-5)
        elif tok.startswith("attn:"):
            x = forward(dict(kind=ATTN, n=x.shape[0], in0=x.shape[1], in1=1, in2=x.shape[2], heads=int(tok[5:])), x,
                        {k: p["%d.%s" % (i, k)] for k in ("wqkv", "bqkv", "wo", "bo")})
        elif tok.startswith("dense:"):
            x = x @ w + b
        elif tok == "gelu":
            x = F.gelu(x, approximate="tanh")
        elif tok == "relu":
            x = torch.relu(x)
        elif tok.startswith("dropout:"):
            x = masks.apply(tok, x)
        elif tok == "res":
            x = inputs[skip] + x
        else:
            raise ValueError("token %s" % tok)
    return x


def model_forward(text, x, p, masks):
    """A declared network (engine/models/seq/seq.h's grammar) in torch:
    x NHWC; dense reads its input flat (NHWC order, as seq does)."""
    inputs = []
    for i, (tok, skip) in enumerate(unroll(text), start=1):
        inputs.append(x)
        w = p.get("%d.w" % i)
        b = p.get("%d.b" % i)
        if tok == "res":
            x = inputs[skip].reshape(x.shape) + x
        elif tok.startswith("dense:"):
            x = (x.reshape(x.shape[0], -1) @ w + b).reshape(x.shape[0], 1, 1, -1)
        elif tok.startswith("conv"):
            kk = int(tok[4:tok.index("x")])
            C, O = x.shape[3], w.shape[1]
            wt = w.reshape(kk, kk, C, O).permute(3, 2, 0, 1)
            x = F.conv2d(x.permute(0, 3, 1, 2), wt, b, padding=(kk - 1) // 2).permute(0, 2, 3, 1)
        elif tok.startswith("maxpool") or tok.startswith("avgpool"):
            pool = F.max_pool2d if tok.startswith("max") else F.avg_pool2d
            x = pool(x.permute(0, 3, 1, 2), int(tok[7:])).permute(0, 2, 3, 1)
        elif tok == "relu":
            x = torch.relu(x)
        elif tok == "gelu":
            x = F.gelu(x, approximate="tanh")
        elif tok.startswith("dropout:"):
            x = masks.apply(tok, x)
        elif tok == "layernorm":
            x = F.layer_norm(x, (x.shape[3],), p["%d.gain" % i], p["%d.bias" % i], 1e-5)
        else:
            raise ValueError("token %s" % tok)
    return x.reshape(x.shape[0], -1)


def run_model(line):
    f = line.split()
    name, n, H, W, C, classes, L, layers = f[0], int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6]), f[7]
    case = Case(dict(name=name, L=L))
    w = load(name, "w")
    dw = load(name, "dw")
    p = {}
    for spec in f[8].split(","):
        tname, off, d0, d1 = spec.split(":")
        shape = (int(d0),) if int(d1) == 0 else (int(d0), int(d1))
        p[tname] = (int(off), shape)
    leaves = {t: t64(w[off:off + int(np.prod(shape))].reshape(shape), True) for t, (off, shape) in p.items()}
    ids = torch.tensor(load(name, "ids").astype(np.int64))
    net = unroll(layers)
    masks = Masks(name)
    if net[0][0].startswith("embed:"):
        # A token network: the features are byte ids v/255; position t
        # predicts token t+1, the last position the label; a sample's loss
        # is the mean over its positions.
        T = H * W * C
        tok = torch.tensor(np.rint(load(name, "x").astype(np.float64) * 255.0).astype(np.int64).reshape(n, T))
        z = token_forward(net, tok, leaves, masks)
        masks.check(case)
        tgt = torch.cat([tok[:, 1:], ids.reshape(n, 1)], dim=1)
        if z.shape[2] != classes:
            case.fails.append("%d logits, %d classes" % (z.shape[2], classes))
            return case
        loss = F.cross_entropy(z.reshape(-1, classes), tgt.reshape(-1), reduction="sum") / T
        loss.backward()
        case.cmp("loss", load(name, "y"), loss.reshape(1))
        for t, (off, shape) in p.items():
            case.cmp("d" + t, dw[off:off + int(np.prod(shape))], leaves[t].grad)
        return case
    x = t64(load(name, "x").reshape(n, H, W, C))
    z = model_forward(layers, x, leaves, masks)
    masks.check(case)
    if z.shape[1] != classes:
        case.fails.append("%d logits, %d classes" % (z.shape[1], classes))
        return case
    loss = F.cross_entropy(z, ids, reduction="sum")
    loss.backward()
    case.cmp("loss", load(name, "y"), loss.reshape(1))
    for t, (off, shape) in p.items():
        case.cmp("d" + t, dw[off:off + int(np.prod(shape))], leaves[t].grad)
    return case


def report(name, run_case):
    print("[ RUN      ] %s" % name)
    try:
        case = run_case()
    except Exception as e:  # a crash in one case fails it, not the others
        print("[  FAILED  ] %s" % name)
        print("    %s: %s" % (type(e).__name__, e))
        return 1
    if case.fails:
        print("[  FAILED  ] %s" % name)
        print("    error / (L * 2^-24): " + ", ".join(case.notes))
        for m in case.fails:
            print("    " + m)
        return 1
    print("[       OK ] %s" % name)
    return 0


def main():
    failed = 0
    with open(os.path.join(DIR, "manifest.txt")) as f:
        lines = [l for l in f if l.strip()]
    if not lines:
        print("[  FAILED  ] nn_oracle: no cases in %s" % DIR)
        return 1
    for line in lines:
        c = parse(line)
        print("[ RUN      ] %s" % c["name"])
        try:
            case = run(c)
        except Exception as e:  # a crash in one case fails it, not the others
            print("[  FAILED  ] %s" % c["name"])
            print("    %s: %s" % (type(e).__name__, e))
            failed = 1
            continue
        if case.fails:
            print("[  FAILED  ] %s" % c["name"])
            print("    error / (L * 2^-24): " + ", ".join(case.notes))
            for m in case.fails:
                print("    " + m)
            failed = 1
        else:
            print("[       OK ] %s" % c["name"])
    mpath = os.path.join(DIR, "models.txt")
    mlines = []
    if os.path.exists(mpath):
        with open(mpath) as f:
            mlines = [l for l in f if l.strip()]
    if not mlines:
        print("[ RUN      ] nn_oracle_models")
        print("[  FAILED  ] nn_oracle_models: no declared networks in %s" % mpath)
        failed = 1
    for line in mlines:
        failed |= report(line.split()[0], lambda: run_model(line))
    lines += mlines
    print("nn_oracle: %d cases, largest error / (L * 2^-24) %.2f (%s), bound %g"
          % (len(lines), WORST[0], WORST[1], MARGIN))
    return failed


if __name__ == "__main__":
    sys.exit(main())
