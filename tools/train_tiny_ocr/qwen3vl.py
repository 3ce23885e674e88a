"""Qwen3-VL's forward in PyTorch, written from ../shared/spec/qwen3vl.md (not from ckjit's code).

Where llama.cpp and Hugging Face differ, `semantics` picks one:
  "llama" (default): what the GGUF pair means to llama.cpp and ckjit: tanh-GELU in the main and
          deepstack mergers (spec B.3), M-RoPE pairs 61 and 62 left unrotated (A.4), images
          fitted with black padding and bilinear on uint8 (C.1).
  "hf":   exact erf GELU in both mergers and pairs 61/62 rotated by t, as transformers does.
The trained model uses "llama": it is trained on the arithmetic it will be run with.

Shapes: torch Linear weights are [out, in], which is GGUF's [in, out] (ne0 = in) read row-major.
"""
import math
from dataclasses import dataclass, field
from typing import List

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IM_START, IM_END, VISION_START, VISION_END = 151644, 151645, 151652, 151653
N_VOCAB = 151936


@dataclass
class TextConfig:
    n_embd: int = 256
    n_layer: int = 4
    n_ff: int = 512
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 128
    n_vocab: int = N_VOCAB
    rope_base: float = 5e6
    sections: List[int] = field(default_factory=lambda: [24, 20, 20, 0])
    eps: float = 1e-6
    n_deepstack: int = 3


@dataclass
class VisionConfig:
    n_embd: int = 128
    n_layer: int = 4
    n_ff: int = 256
    n_head: int = 2
    patch: int = 16
    merge: int = 2
    deepstack_layers: List[int] = field(default_factory=lambda: [0, 1, 3])
    eps: float = 1e-6
    pos_side: int = 48


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def gelu(x, exact):
    if exact:
        return F.gelu(x)
    x = rh(x)  # llama.cpp's CPU table: gelu of the f16 value, stored as f16
    return rh(0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))))


def f16(x):
    """Rounded to f16 (nearest even) and back: llama.cpp's input rounding for F16 weights, its f16
    KV cache and attention inputs."""
    return x.to(torch.float16).to(x.dtype)


def q8_0(x):
    """Rounded as llama.cpp quantizes an activation row for a Q8_0 matrix: blocks of 32, d = amax/127,
    q = round(x/d) (nearest even, as its x86 code rounds), the value q * f16(d)."""
    b = x.reshape(-1, 32)
    d = b.abs().amax(dim=1, keepdim=True) / 127.0
    q = torch.round(torch.where(d > 0, b / torch.where(d > 0, d, torch.ones_like(d)), torch.zeros_like(b)))
    return (q * f16(d)).reshape(x.shape)


class Emulation:
    """Off by default: the ideal forward. On: the roundings ckjit and llama.cpp apply on purpose
    (Q8_0 activation rows, f16 inputs of F16 matrices, f16 KV and attention inputs, the f16 GELU
    table), so that what is left between two forwards is float order, not design."""
    on = False


def rq(x):
    return q8_0(x) if Emulation.on else x


def rh(x):
    return f16(x) if Emulation.on else x


def rotate_half_apply(x, cos, sin):
    """x [..., d]; pairs (j, j + d/2) rotated by the angle whose cos/sin are given for j < d/2."""
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class LayerNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(n)), nn.Parameter(torch.zeros(n)), eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias


class VisionBlock(nn.Module):
    def __init__(self, c: VisionConfig):
        super().__init__()
        C = c.n_embd
        self.ln1, self.ln2 = LayerNorm(C, c.eps), LayerNorm(C, c.eps)
        self.qkv, self.out = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.up, self.down = nn.Linear(C, c.n_ff), nn.Linear(c.n_ff, C)
        self.n_head = c.n_head

    def forward(self, z, cos, sin):
        B, n, C = z.shape
        H, dh = self.n_head, C // self.n_head
        q, k, v = self.qkv(rh(self.ln1(z))).split(C, dim=-1)
        q, k, v = (t.view(B, n, H, dh).transpose(1, 2) for t in (q, k, v))  # [B, H, n, dh]
        q, k = rotate_half_apply(q, cos, sin), rotate_half_apply(k, cos, sin)
        q, k, v = rh(q), rh(k), rh(v)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1)  # full attention, no mask
        z = z + self.out(rh((att @ v).transpose(1, 2).reshape(B, n, C)))
        return z + self.down(rh(gelu(self.up(rh(self.ln2(z))), exact=False)))


class Merger(nn.Module):
    """Groups 4 consecutive rows (merge order) into one; LayerNorm before grouping (main merger,
    over C) or after it (deepstack mergers, over 4C); then fc1, GELU, fc2."""

    def __init__(self, C, D, eps, norm_after_grouping):
        super().__init__()
        self.after = norm_after_grouping
        self.norm = LayerNorm(4 * C if norm_after_grouping else C, eps)
        self.fc1, self.fc2 = nn.Linear(4 * C, 4 * C), nn.Linear(4 * C, D)

    def forward(self, z, exact_gelu):
        g4 = lambda t: t.reshape(t.shape[0], -1, 4 * z.shape[-1])
        g = self.norm(g4(z)) if self.after else g4(self.norm(z))
        return self.fc2(rh(gelu(self.fc1(rh(g)), exact_gelu)))


class Vision(nn.Module):
    def __init__(self, c: VisionConfig, out_dim: int):
        super().__init__()
        self.c = c
        C, p = c.n_embd, c.patch
        self.patch_w0 = nn.Parameter(torch.zeros(C, 3, p, p))
        self.patch_w1 = nn.Parameter(torch.zeros(C, 3, p, p))
        self.patch_b = nn.Parameter(torch.zeros(C))
        self.pos = nn.Parameter(torch.zeros(c.pos_side * c.pos_side, C))
        self.blocks = nn.ModuleList(VisionBlock(c) for _ in range(c.n_layer))
        self.post = Merger(C, out_dim, c.eps, norm_after_grouping=False)
        self.deepstack = nn.ModuleDict({str(i): Merger(C, out_dim, c.eps, norm_after_grouping=True)
                                        for i in c.deepstack_layers})

    def merge_order(self, gh, gw):
        """Raster patch index for each sequence index: 2x2 blocks in raster order, inside a block
        (0,0), (0,1), (1,0), (1,1) (spec B.3 step 2). Returns (rows, cols) of each sequence entry."""
        s = torch.arange(gh * gw)
        blk, inner = s // 4, s % 4
        rows = (blk // (gw // 2)) * 2 + inner // 2
        cols = (blk % (gw // 2)) * 2 + inner % 2
        return rows, cols

    def position_table(self, gh, gw):
        """The learned 48x48 table resized to gh x gw, bilinear with align corners (spec B.3 step 3)."""
        S = self.c.pos_side
        P = self.pos.view(S, S, -1)
        if gh == S and gw == S:
            return P
        def axis(n):
            t = torch.arange(n, dtype=torch.float64) * (S - 1) / (n - 1) if n > 1 else torch.zeros(1, dtype=torch.float64)
            i0 = t.floor().long().clamp(max=S - 1)
            i1 = (i0 + 1).clamp(max=S - 1)
            return i0, i1, (t - i0).to(P.dtype)
        y0, y1, fy = axis(gh)
        x0, x1, fx = axis(gw)
        fy, fx = fy[:, None, None], fx[None, :, None]
        return (P[y0][:, x0] * (1 - fx) * (1 - fy) + P[y0][:, x1] * fx * (1 - fy) +
                P[y1][:, x0] * (1 - fx) * fy + P[y1][:, x1] * fx * fy)

    def rope(self, rows, cols, dtype):
        """2D RoPE (spec B.4): pairs (j, j + dh/2); j < dh/4 turn by row * w_j, the rest by col * w_(j - dh/4)."""
        dh = self.c.n_embd // self.c.n_head
        q = dh // 4
        omega = 10000.0 ** (-4.0 * torch.arange(q, dtype=torch.float64) / dh)
        ang = torch.cat([rows[:, None].double() * omega, cols[:, None].double() * omega], dim=1)  # [n, dh/2]
        return ang.cos().to(dtype), ang.sin().to(dtype)

    def forward(self, pixels, semantics="llama"):
        """pixels [3, H, W] or [B, 3, H, W] normalized (a batch: one size); returns [(B,) n/4, 4 * out_dim]:
        [main | ds_0 | ds_1 | ds_2] per merged patch, and the merged grid (rows, cols)."""
        if pixels.dim() == 3:
            rows, grid = self.forward(pixels[None], semantics)
            return rows[0], grid
        p = self.c.patch
        B, _, H, W = pixels.shape
        gh, gw = H // p, W // p
        patches = pixels.reshape(B, 3, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5).reshape(B, gh * gw, 3 * p * p)
        w = (self.patch_w0 + self.patch_w1).reshape(self.c.n_embd, -1)
        e = rh(patches) @ w.t() + self.patch_b  # [B, gh*gw, C], raster order
        rows, cols = self.merge_order(gh, gw)
        raster = rows * gw + cols
        z = e[:, raster] + self.position_table(gh, gw).reshape(gh * gw, -1)[raster]
        cos, sin = self.rope(rows, cols, z.dtype)
        exact = semantics == "hf"
        ds = []
        for i, blk in enumerate(self.blocks):
            z = blk(z, cos, sin)
            if str(i) in self.deepstack:
                ds.append(self.deepstack[str(i)](z, exact))
        return torch.cat([self.post(z, exact)] + ds, dim=-1), (gh // 2, gw // 2)


class TextLayer(nn.Module):
    def __init__(self, c: TextConfig):
        super().__init__()
        E, d = c.n_embd, c.head_dim
        self.attn_norm, self.ffn_norm = nn.Parameter(torch.ones(E)), nn.Parameter(torch.ones(E))
        self.q, self.k, self.v = (nn.Linear(E, n * d, bias=False) for n in (c.n_head, c.n_head_kv, c.n_head_kv))
        self.q_norm, self.k_norm = nn.Parameter(torch.ones(d)), nn.Parameter(torch.ones(d))
        self.o = nn.Linear(c.n_head * d, E, bias=False)
        self.gate, self.up = nn.Linear(E, c.n_ff, bias=False), nn.Linear(E, c.n_ff, bias=False)
        self.down = nn.Linear(c.n_ff, E, bias=False)
        self.c = c

    def forward(self, h, cos, sin, mask):
        """h [B, T, E]; cos, sin [B, T, head_dim/2]."""
        c = self.c
        B, T = h.shape[:2]
        x = rq(rms_norm(h, self.attn_norm, c.eps))
        q = rms_norm(self.q(x).view(B, T, c.n_head, c.head_dim), self.q_norm, c.eps).transpose(1, 2)
        k = rms_norm(self.k(x).view(B, T, c.n_head_kv, c.head_dim), self.k_norm, c.eps).transpose(1, 2)
        v = rh(self.v(x).view(B, T, c.n_head_kv, c.head_dim).transpose(1, 2))
        cos, sin = cos[:, None], sin[:, None]
        q, k = rh(rotate_half_apply(q, cos, sin)), rh(rotate_half_apply(k, cos, sin))
        rep = c.n_head // c.n_head_kv  # query head h uses KV head h // rep
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(c.head_dim) + mask
        a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, -1)
        h = h + self.o(rq(a))
        x = rq(rms_norm(h, self.ffn_norm, c.eps))
        return h + self.down(rq(F.silu(self.gate(x)) * self.up(x)))


class Text(nn.Module):
    def __init__(self, c: TextConfig):
        super().__init__()
        self.c = c
        self.embd = nn.Parameter(torch.zeros(c.n_vocab, c.n_embd))  # tied: also the output matrix
        self.layers = nn.ModuleList(TextLayer(c) for _ in range(c.n_layer))
        self.out_norm = nn.Parameter(torch.ones(c.n_embd))

    def mrope(self, pos, dtype, semantics):
        """Interleaved M-RoPE (spec A.4). pos [T, 3] = (t, h, w); e = 0 for every token."""
        c = self.c
        half = c.head_dim // 2
        s0, s1, s2, _ = c.sections
        k = torch.arange(half)
        comp = torch.full((half,), 3)  # 3 = e
        comp[(k % 3 == 0) & (k < 3 * s0)] = 0
        comp[(k % 3 == 1) & (k < 3 * s1)] = 1
        comp[(k % 3 == 2) & (k < 3 * s2)] = 2
        if semantics == "hf":
            comp[comp == 3] = 0  # HF turns the leftover pairs by t
        p4 = torch.cat([pos.double(), torch.zeros(*pos.shape[:-1], 1, dtype=torch.float64)], dim=-1)
        inv = c.rope_base ** (-2.0 * k.double() / c.head_dim)
        ang = p4[..., comp] * inv
        return ang.cos().to(dtype), ang.sin().to(dtype)

    def forward(self, ids, image_rows, pos, semantics="llama", emb=None, hidden=False):
        """ids [(B,) T] (-1 at image rows), image_rows [(B,) n_img, E*(1+n_deepstack)] in the order of
        the -1s (every sequence of a batch has as many), pos [(B,) T, 3]. Returns logits [(B,) T, V].
        emb: the embedding matrix, if not self.embd (training: the used rows only). hidden: return the
        normed final hidden states instead (the caller multiplies only the rows it needs)."""
        if ids.dim() == 1:
            rows = None if image_rows is None else image_rows[None]
            return self.forward(ids[None], rows, pos[None], semantics, emb, hidden)[0]
        c = self.c
        E = c.n_embd
        emb = self.embd if emb is None else emb
        img = ids < 0
        has_img = image_rows is not None and bool(img.any())
        h = emb[ids.clamp(min=0)]
        if has_img:
            flat = image_rows.reshape(-1, image_rows.shape[-1]).to(h.dtype)
            h = h.masked_scatter(img[..., None], flat[:, :E])
        cos, sin = self.mrope(pos, h.dtype, semantics)
        T = ids.shape[1]
        mask = torch.full((T, T), float("-inf"), dtype=h.dtype).triu(1)
        for il, layer in enumerate(self.layers):
            h = layer(h, cos, sin, mask)
            if il < c.n_deepstack and has_img:
                h = h + torch.zeros_like(h).masked_scatter(img[..., None], flat[:, (il + 1) * E:(il + 2) * E])
        h = rq(rms_norm(h, self.out_norm, c.eps))
        return h if hidden else h @ emb.t()


class Qwen3VL(nn.Module):
    def __init__(self, tc: TextConfig, vc: VisionConfig):
        super().__init__()
        self.text, self.vision = Text(tc), Vision(vc, tc.n_embd)


# ---- image preprocessing (spec C.1, llama.cpp) ----

def plan_resize(W, H, min_tokens=8, max_tokens=4096, factor=32):
    f32 = np.float32
    f = f32(factor)
    min_px, max_px = f32(min_tokens) * f * f, f32(max_tokens) * f * f
    fw, fh = f32(W), f32(H)
    rnd = lambda v: np.float32(np.sign(v) * np.floor(np.abs(v) + f32(0.5)))  # half away from zero
    h = max(f, rnd(fh / f) * f)
    w = max(f, rnd(fw / f) * f)
    if h * w > max_px:
        beta = np.sqrt(f32(fh * fw / max_px), dtype=np.float32)
        h = max(f, np.floor(fh / beta / f) * f)
        w = max(f, np.floor(fw / beta / f) * f)
    elif h * w < min_px:
        beta = np.sqrt(f32(min_px / (fh * fw)), dtype=np.float32)
        h = np.ceil(fh * beta / f) * f
        w = np.ceil(fw * beta / f) * f
    w, h = int(w), int(h)
    if (w, h) == (W, H):
        return w, h, W, H, 0, 0
    s = min(f32(w) / fw, f32(h) / fh)
    cw, ch = min(int(np.ceil(fw * s)), w), min(int(np.ceil(fh * s)), h)
    return w, h, cw, ch, (w - cw) // 2, (h - ch) // 2


def resize_bilinear_u8(img, nw, nh):
    """img uint8 [H, W, 3] -> [nh, nw, 3]; align-corners ratios, float32 lerps, truncation."""
    f32 = np.float32
    H, W = img.shape[:2]
    rx = f32(W - 1) / f32(nw - 1) if nw > 1 else f32(0)
    ry = f32(H - 1) / f32(nh - 1) if nh > 1 else f32(0)
    px = np.arange(nw, dtype=np.float32) * rx
    py = np.arange(nh, dtype=np.float32) * ry
    x0 = np.minimum(px.astype(np.int64), W - 1); x1 = np.minimum(x0 + 1, W - 1)
    y0 = np.minimum(py.astype(np.int64), H - 1); y1 = np.minimum(y0 + 1, H - 1)
    fx = (px - x0.astype(np.float32))[None, :, None]
    fy = (py - y0.astype(np.float32))[:, None, None]
    src = img.astype(np.float32)
    p00, p10 = src[y0][:, x0], src[y0][:, x1]
    p01, p11 = src[y1][:, x0], src[y1][:, x1]
    top = p00 + (p10 - p00) * fx
    bot = p01 + (p11 - p01) * fx
    return (top + (bot - top) * fy).astype(np.uint8)


def preprocess(img, min_tokens=8, max_tokens=4096):
    """img uint8 [H, W, 3] (RGB) -> float32 tensor [3, h', w'] in [-1, 1], black padding."""
    H, W = img.shape[:2]
    w, h, cw, ch, x0, y0 = plan_resize(W, H, min_tokens, max_tokens)
    if (w, h) == (W, H):
        canvas = img
    else:
        canvas = np.zeros((h, w, 3), dtype=np.uint8)
        canvas[y0:y0 + ch, x0:x0 + cw] = resize_bilinear_u8(img, cw, ch)
    x = (canvas.astype(np.float32) / np.float32(255.0) - np.float32(0.5)) / np.float32(0.5)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))


def load_image(path):
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)


# ---- prompt positions (spec D.4) ----

def positions(ids, grid):
    """ids with -1 at image rows (one image); grid = (ny, nx) merged. Returns [T, 3] (t, h, w)."""
    ny, nx = grid
    out, p, i = [], 0, 0
    while i < len(ids):
        if ids[i] >= 0:
            out.append((p, p, p)); p += 1; i += 1
            continue
        p0 = p
        for r in range(ny * nx):
            out.append((p0, p0 + r // nx, p0 + r % nx))
        i += ny * nx
        p = p0 + max(nx, ny)
    return torch.tensor(out, dtype=torch.long)
