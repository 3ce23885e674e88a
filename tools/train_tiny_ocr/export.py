"""The PyTorch model <-> a llama.cpp-style GGUF pair (text `qwen3vl` + mmproj `clip`/`qwen3vl_merger`).

Names, shapes and keys from ../shared/spec/qwen3vl.md A.1-A.2 and B.1-B.2. The text model's
matrices are written as Q8_0 (ckjit multiplies K-quants and Q8_0; Q8_0 keeps a trained model's
weights within 0.4 % per block), its norms as F32; the mmproj's matrices as F16 and its norms,
biases and position table as F32, as llama.cpp's converter writes them. The tokenizer (tokens,
merges, types, chat template) is copied from a template GGUF: any qwen3vl text file with the Qwen3
tokenizer, e.g. one `ckjit synth` wrote.
"""
import numpy as np
import torch

import gguf_io as G
from qwen3vl import Qwen3VL, TextConfig, VisionConfig


def _np(t):
    return t.detach().to(torch.float32).cpu().numpy()


def write_pair(model: Qwen3VL, template_path, text_path, mmproj_path, name="ckjit tiny ocr", used=None,
               mmproj_q8=False):
    """used (sorted ids): write a compact text file instead (runtime/synth/compact_text.h: only those
    rows of token_embd, no tokenizer; `ckjit synth --expand` makes the full file). mmproj_q8: the
    mmproj's matrices as Q8_0 and its patch kernels F32, as llama.cpp's converter writes q8_0."""
    tc, vc = model.text.c, model.vision.c
    w = G.Writer()
    w.add_kv("general.architecture", G.string("qwen3vl"))
    w.add_kv("general.type", G.string("model"))
    w.add_kv("general.name", G.string(name))
    w.add_kv("general.file_type", G.u32(7))  # mostly Q8_0
    w.add_kv("general.quantization_version", G.u32(2))
    a = "qwen3vl."
    w.add_kv(a + "context_length", G.u32(262144))
    w.add_kv(a + "embedding_length", G.u32(tc.n_embd))
    w.add_kv(a + "block_count", G.u32(tc.n_layer))
    w.add_kv(a + "feed_forward_length", G.u32(tc.n_ff))
    w.add_kv(a + "attention.head_count", G.u32(tc.n_head))
    w.add_kv(a + "attention.head_count_kv", G.u32(tc.n_head_kv))
    w.add_kv(a + "attention.key_length", G.u32(tc.head_dim))
    w.add_kv(a + "attention.value_length", G.u32(tc.head_dim))
    w.add_kv(a + "attention.layer_norm_rms_epsilon", G.f32(tc.eps))
    w.add_kv(a + "rope.freq_base", G.f32(tc.rope_base))
    w.add_kv(a + "rope.dimension_sections", G.array(G.I32, tc.sections))
    w.add_kv(a + "n_deepstack_layers", G.u32(tc.n_deepstack))
    t = model.text
    if t.embd.shape[0] != tc.n_vocab:
        raise ValueError(f"vocabulary rows {t.embd.shape[0]} != n_vocab {tc.n_vocab}")
    if used is None:
        n_tok = 0
        for key, v in G.Reader(template_path).kv.items():
            if key.startswith("tokenizer."):
                w.add_kv(key, v)
                if key == "tokenizer.ggml.tokens":
                    n_tok = len(v.value)
        if n_tok == 0:
            raise ValueError(f"{template_path}: no tokenizer.ggml.tokens to copy")
        w.add_tensor("token_embd.weight", _np(t.embd), G.T_Q8_0)
    else:
        rows = _np(t.embd)
        unused = np.setdiff1d(np.arange(tc.n_vocab), np.asarray(used))
        filler = rows[unused[0]]
        if not (rows[unused] == filler).all():
            raise ValueError("a compact file needs every unused row alike")
        w.add_kv("ckjit.compact.used_ids", G.array(G.I32, used))
        w.add_kv("ckjit.compact.n_vocab", G.u32(tc.n_vocab))
        w.add_kv("ckjit.compact.filler", G.array(G.U8, np.frombuffer(G.quantize_q8_0(filler), np.uint8).tolist()))
        w.add_tensor("token_embd.weight", rows[np.asarray(used)], G.T_Q8_0)
    w.add_tensor("output_norm.weight", _np(t.out_norm), G.T_F32)
    for i, L in enumerate(t.layers):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", _np(L.attn_norm), G.T_F32)
        w.add_tensor(b + "attn_q.weight", _np(L.q.weight), G.T_Q8_0)
        w.add_tensor(b + "attn_k.weight", _np(L.k.weight), G.T_Q8_0)
        w.add_tensor(b + "attn_v.weight", _np(L.v.weight), G.T_Q8_0)
        w.add_tensor(b + "attn_q_norm.weight", _np(L.q_norm), G.T_F32)
        w.add_tensor(b + "attn_k_norm.weight", _np(L.k_norm), G.T_F32)
        w.add_tensor(b + "attn_output.weight", _np(L.o.weight), G.T_Q8_0)
        w.add_tensor(b + "ffn_norm.weight", _np(L.ffn_norm), G.T_F32)
        w.add_tensor(b + "ffn_gate.weight", _np(L.gate.weight), G.T_Q8_0)
        w.add_tensor(b + "ffn_up.weight", _np(L.up.weight), G.T_Q8_0)
        w.add_tensor(b + "ffn_down.weight", _np(L.down.weight), G.T_Q8_0)
    w.write(text_path)

    v = model.vision
    m = G.Writer()
    m.add_kv("general.architecture", G.string("clip"))
    m.add_kv("general.type", G.string("mmproj"))
    m.add_kv("general.name", G.string(name + " vision"))
    m.add_kv("general.file_type", G.u32(7 if mmproj_q8 else 1))
    mat = G.T_Q8_0 if mmproj_q8 else G.T_F16
    m.add_kv("clip.projector_type", G.string("qwen3vl_merger"))
    m.add_kv("clip.has_vision_encoder", G.boolean(True))
    m.add_kv("clip.use_gelu", G.boolean(True))
    c = "clip.vision."
    m.add_kv(c + "embedding_length", G.u32(vc.n_embd))
    m.add_kv(c + "feed_forward_length", G.u32(vc.n_ff))
    m.add_kv(c + "block_count", G.u32(vc.n_layer))
    m.add_kv(c + "attention.head_count", G.u32(vc.n_head))
    m.add_kv(c + "attention.layer_norm_epsilon", G.f32(vc.eps))
    m.add_kv(c + "projection_dim", G.u32(tc.n_embd))
    m.add_kv(c + "image_size", G.u32(vc.pos_side * vc.patch))
    m.add_kv(c + "patch_size", G.u32(vc.patch))
    m.add_kv(c + "spatial_merge_size", G.u32(vc.merge))
    m.add_kv(c + "image_mean", G.array(G.F32V, [0.5, 0.5, 0.5]))
    m.add_kv(c + "image_std", G.array(G.F32V, [0.5, 0.5, 0.5]))
    m.add_kv(c + "is_deepstack_layers", G.array(G.BOOL, [i in vc.deepstack_layers for i in range(vc.n_layer)]))
    m.add_tensor("v.patch_embd.weight", _np(v.patch_w0), G.T_F32 if mmproj_q8 else G.T_F16)
    m.add_tensor("v.patch_embd.weight.1", _np(v.patch_w1), G.T_F32 if mmproj_q8 else G.T_F16)
    m.add_tensor("v.patch_embd.bias", _np(v.patch_b), G.T_F32)
    m.add_tensor("v.position_embd.weight", _np(v.pos), G.T_F32)
    for i, B in enumerate(v.blocks):
        b = f"v.blk.{i}."
        for nm, mod in (("ln1", B.ln1), ("ln2", B.ln2)):
            m.add_tensor(b + nm + ".weight", _np(mod.weight), G.T_F32)
            m.add_tensor(b + nm + ".bias", _np(mod.bias), G.T_F32)
        for nm, lin in (("attn_qkv", B.qkv), ("attn_out", B.out), ("ffn_up", B.up), ("ffn_down", B.down)):
            m.add_tensor(b + nm + ".weight", _np(lin.weight), mat)
            m.add_tensor(b + nm + ".bias", _np(lin.bias), G.T_F32)
    m.add_tensor("v.post_ln.weight", _np(v.post.norm.weight), G.T_F32)
    m.add_tensor("v.post_ln.bias", _np(v.post.norm.bias), G.T_F32)
    for nm, lin in (("mm.0", v.post.fc1), ("mm.2", v.post.fc2)):
        m.add_tensor(nm + ".weight", _np(lin.weight), mat)
        m.add_tensor(nm + ".bias", _np(lin.bias), G.T_F32)
    for i in vc.deepstack_layers:
        d = v.deepstack[str(i)]
        b = f"v.deepstack.{i}."
        m.add_tensor(b + "norm.weight", _np(d.norm.weight), G.T_F32)
        m.add_tensor(b + "norm.bias", _np(d.norm.bias), G.T_F32)
        for nm, lin in (("fc1", d.fc1), ("fc2", d.fc2)):
            m.add_tensor(b + nm + ".weight", _np(lin.weight), mat)
            m.add_tensor(b + nm + ".bias", _np(lin.bias), G.T_F32)
    m.write(mmproj_path)


def read_pair(text_path, mmproj_path, dtype=torch.float32):
    """The model a GGUF pair describes, weights as the files hold them (Q8_0/F16 dequantized)."""
    t, m = G.Reader(text_path), G.Reader(mmproj_path)
    a = "qwen3vl."
    tc = TextConfig(n_embd=t.get(a + "embedding_length"), n_layer=t.get(a + "block_count"),
                    n_ff=t.get(a + "feed_forward_length"), n_head=t.get(a + "attention.head_count"),
                    n_head_kv=t.get(a + "attention.head_count_kv"), head_dim=t.get(a + "attention.key_length"),
                    n_vocab=t.tensors["token_embd.weight"][0][1], rope_base=t.get(a + "rope.freq_base"),
                    sections=list(t.get(a + "rope.dimension_sections")),
                    eps=t.get(a + "attention.layer_norm_rms_epsilon"), n_deepstack=t.get(a + "n_deepstack_layers", 0))
    if "output.weight" in t.tensors:
        raise ValueError(f"{text_path}: untied output.weight is not modelled here")
    c = "clip.vision."
    n_layer = m.get(c + "block_count")
    vc = VisionConfig(n_embd=m.get(c + "embedding_length"), n_layer=n_layer, n_ff=m.get(c + "feed_forward_length"),
                      n_head=m.get(c + "attention.head_count"), patch=m.get(c + "patch_size"),
                      merge=m.get(c + "spatial_merge_size", 2),
                      deepstack_layers=[i for i in range(n_layer) if f"v.deepstack.{i}.norm.weight" in m.tensors],
                      eps=m.get(c + "attention.layer_norm_epsilon"))
    model = Qwen3VL(tc, vc).to(dtype)
    T = lambda r, name: torch.from_numpy(r.tensor(name).copy()).to(dtype)
    with torch.no_grad():
        tx = model.text
        tx.embd.copy_(T(t, "token_embd.weight"))
        tx.out_norm.copy_(T(t, "output_norm.weight"))
        for i, L in enumerate(tx.layers):
            b = f"blk.{i}."
            for nm, p in (("attn_norm", L.attn_norm), ("attn_q", L.q.weight), ("attn_k", L.k.weight),
                          ("attn_v", L.v.weight), ("attn_q_norm", L.q_norm), ("attn_k_norm", L.k_norm),
                          ("attn_output", L.o.weight), ("ffn_norm", L.ffn_norm), ("ffn_gate", L.gate.weight),
                          ("ffn_up", L.up.weight), ("ffn_down", L.down.weight)):
                p.copy_(T(t, b + nm + ".weight"))
        v = model.vision
        v.patch_w0.copy_(T(m, "v.patch_embd.weight"))
        v.patch_w1.copy_(T(m, "v.patch_embd.weight.1"))
        v.patch_b.copy_(T(m, "v.patch_embd.bias"))
        v.pos.copy_(T(m, "v.position_embd.weight"))
        for i, B in enumerate(v.blocks):
            b = f"v.blk.{i}."
            for nm, mod in (("ln1", B.ln1), ("ln2", B.ln2), ("attn_qkv", B.qkv), ("attn_out", B.out),
                            ("ffn_up", B.up), ("ffn_down", B.down)):
                mod.weight.copy_(T(m, b + nm + ".weight"))
                mod.bias.copy_(T(m, b + nm + ".bias"))
        v.post.norm.weight.copy_(T(m, "v.post_ln.weight"))
        v.post.norm.bias.copy_(T(m, "v.post_ln.bias"))
        for nm, lin in (("mm.0", v.post.fc1), ("mm.2", v.post.fc2)):
            lin.weight.copy_(T(m, nm + ".weight"))
            lin.bias.copy_(T(m, nm + ".bias"))
        for i in vc.deepstack_layers:
            d, b = v.deepstack[str(i)], f"v.deepstack.{i}."
            d.norm.weight.copy_(T(m, b + "norm.weight"))
            d.norm.bias.copy_(T(m, b + "norm.bias"))
            for nm, lin in (("fc1", d.fc1), ("fc2", d.fc2)):
                lin.weight.copy_(T(m, b + nm + ".weight"))
                lin.bias.copy_(T(m, b + nm + ".bias"))
    return model


QK_NORM = 1.0


def randomize(model: Qwen3VL, seed, gain=0.5):
    """Random weights at scales where every part of the chain matters but no layer amplifies float
    noise much: matrices ~ N(0, gain^2/fan_in) (at gain 1 four layers turned 1e-3 row differences
    into 8 % of the logits' spread; at 0.5, 3 %), norms 1 +- 0.1 (the per-head Q/K norms at
    QK_NORM: at 0.3 attention was so flat that wrong image positions moved the logits less than
    float noise), biases +- 0.05, the position table 0.5, embeddings 1."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                fan_in = p.shape[1] if p.dim() == 2 else p[0].numel()
                std = 0.5 if name.endswith("vision.pos") else (1.0 if name.endswith("embd") else gain * fan_in ** -0.5)
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif name.endswith("bias") or name.endswith("patch_b"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            else:  # the norms' scales
                p.copy_((QK_NORM if name.endswith(("q_norm", "k_norm")) else 1.0) * (1.0 + 0.1 * torch.randn(p.shape, generator=g)))
    return model


UNUSED = 16.0  # first coordinate of every row the trained model never emits (train.py's docstring)


def model_from_checkpoint(state, dtype=torch.float32):
    """A train.py checkpoint as a full-vocabulary model: used rows (EMB0, trained rest), the others
    (-UNUSED, 0, ...)."""
    tc = TextConfig(**state["text"], n_vocab=151936)
    vc = VisionConfig(**state["vision"])
    model = Qwen3VL(tc, vc)
    sd = {k: v for k, v in state["model"].items() if k != "text.embd"}
    missing = model.load_state_dict(sd, strict=False).missing_keys
    if missing != ["text.embd"]:
        raise ValueError(f"checkpoint lacks {missing}")
    full = torch.zeros(tc.n_vocab, tc.n_embd)
    full[:, 0] = -UNUSED
    used = torch.tensor(state["used"])
    full[used, 0] = state["emb0"]
    full[used, 1:] = state["emb_rest"]
    with torch.no_grad():
        model.text.embd = torch.nn.Parameter(full)
    return model.to(dtype)


def write_trained(checkpoint, template_path, text_path, mmproj_path, compact=False):
    """compact: the text file holds only the used rows and no tokenizer (template_path unused) and the
    mmproj's matrices are Q8_0: what assets/ ships."""
    state = torch.load(checkpoint)
    write_pair(model_from_checkpoint(state), template_path, text_path, mmproj_path,
               name=f"ckjit tiny ocr (step {state['step']})", used=state["used"] if compact else None,
               mmproj_q8=compact)
    return state


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="a train.py checkpoint -> GGUF pair")
    ap.add_argument("checkpoint")
    ap.add_argument("--template", help="a qwen3vl GGUF with the Qwen3 tokenizer (ckjit synth writes one); not with --compact")
    ap.add_argument("--out", required=True, help="directory for tiny-ocr-Q8_0.gguf and mmproj-tiny-ocr-f16.gguf")
    ap.add_argument("--compact", action="store_true",
                    help="write tiny-ocr-Q8_0.compact.gguf (used rows only, no tokenizer: `ckjit synth --expand` "
                         "makes the full file) and mmproj-tiny-ocr-q8_0.gguf")
    a = ap.parse_args()
    import os
    if not a.compact and not a.template:
        ap.error("--template is needed without --compact")
    os.makedirs(a.out, exist_ok=True)
    text = "tiny-ocr-Q8_0.compact.gguf" if a.compact else "tiny-ocr-Q8_0.gguf"
    mm = "mmproj-tiny-ocr-q8_0.gguf" if a.compact else "mmproj-tiny-ocr-f16.gguf"
    s = write_trained(a.checkpoint, a.template, os.path.join(a.out, text), os.path.join(a.out, mm), a.compact)
    print(f"wrote {a.out}: step {s['step']}, level {s['level']}, best {s['best']}")
