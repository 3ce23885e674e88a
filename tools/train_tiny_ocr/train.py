#!/usr/bin/python3
"""Trains a tiny Qwen3-VL-shaped pair to read rendered pages (data.py), in the background, resumable.

    nohup /usr/bin/python3 tools/train_tiny_ocr/train.py --out runs/tiny > runs/tiny/log 2>&1 &

Every --ckpt-min minutes OUT/last.pt is rewritten (model, optimizer, step, level, data seeds), and
OUT/best.pt whenever the held-out CER at the highest level reached so far improves; a restart resumes
from last.pt. OUT/log.jsonl has one line per evaluation. export.py's write_trained() turns a
checkpoint into a GGUF pair.

The vocabulary: only the ids the pages and the chat prompt use are trained (`used`, sorted); their
rows carry a constant first coordinate (+EMB0, not trained), so the residual stream keeps a positive
first coordinate, and the full table's other rows are (-UNUSED, 0, ...): an unused id's logit is then
far below every used one's (write_trained checks it on held-out pages).
"""
import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as D  # noqa: E402
import qwen3vl as Q  # noqa: E402
from export import UNUSED  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

EMB0 = 1.0
TEXT = dict(n_embd=256, n_layer=4, n_ff=768, n_head=4, n_head_kv=2)
VISION = dict(n_embd=192, n_layer=4, n_ff=768, n_head=3, deepstack_layers=[0, 1, 2])
TEMPLATE_HEAD = [Q.IM_START, 872, 198, Q.VISION_START]  # <|im_start|>user\n<|vision_start|>
ASSISTANT = [Q.IM_END, 198, Q.IM_START, 77091, 198]  # <|im_end|>\n<|im_start|>assistant\n


def used_ids(tok, words):
    """Every id a page or the prompt can contain: each word in each case with and without a leading
    space, digits, punctuation pieces, newlines, the template's ids; checked on 20,000 sampled lines."""
    ids = set(TEMPLATE_HEAD + ASSISTANT + [Q.VISION_END] + tok.encode(D.PROMPT))
    for w in words:
        for v in (w, w.capitalize(), w.upper()):
            ids.update(tok.encode(v))
            ids.update(tok.encode(" " + v))
            ids.update(tok.encode("(" + v))
            ids.update(tok.encode(" (" + v))
            ids.update(tok.encode("#" + v))
    for text in ["0123456789", " ", "\n"] + [p + q for p in D.PUNCT + [" "] for q in D.PUNCT + ["", "\n", " "]]:
        ids.update(tok.encode(text))
        ids.update(tok.encode(" " + text))
    pages = D.Pages(12345, words)
    for lv in range(4):
        for _ in range(5000):
            ids.update(tok.encode(pages.line(D.Pages.LEVELS[lv][1]) + "\n" + pages.line(6)))
    return sorted(ids)


class Trainer:
    def __init__(self, args):
        self.args = args
        self.tok = Tokenizer()
        self.words = D.words()
        self.used = used_ids(self.tok, self.words)
        self.local = {g: i for i, g in enumerate(self.used)}
        torch.manual_seed(args.seed)
        random.seed(args.seed)
        tc = Q.TextConfig(**TEXT, n_vocab=Q.N_VOCAB)
        vc = Q.VisionConfig(**VISION)
        self.model = Q.Qwen3VL(tc, vc)
        # the full table is never trained: only the used rows (emb_rest) are
        self.model.text.embd = torch.nn.Parameter(torch.zeros(0, tc.n_embd), requires_grad=False)
        self.emb_rest = torch.nn.Parameter(torch.randn(len(self.used), tc.n_embd - 1) * 0.1)
        self.init_weights()
        params = [p for p in self.model.parameters() if p.requires_grad] + [self.emb_rest]
        self.opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01, betas=(0.9, 0.98))
        self.step, self.level, self.best = 0, 0, {}
        self.pages = D.Pages(args.seed)
        self.heldout = {lv: self.make_heldout(lv) for lv in range(4)}

    def init_weights(self):
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                if not p.requires_grad:
                    continue
                if p.dim() >= 2:
                    fan_in = p.shape[1] if p.dim() == 2 else p[0].numel()
                    p.copy_(torch.randn(p.shape) * (0.02 if name.endswith("vision.pos") else fan_in ** -0.5))
                    if name.endswith(("o.weight", "down.weight", "out.weight")):
                        p.mul_(0.5)
                elif name.endswith("bias") or name.endswith("patch_b"):
                    p.zero_()
                else:
                    p.fill_(1.0)

    def emb(self):
        return torch.cat([torch.full((len(self.used), 1), EMB0), self.emb_rest], dim=1)

    def logits(self, h):
        """Logits over the used ids plus one last column for every unused id (their rows are all
        (-UNUSED, 0, ...) in the exported file): trained against like any wrong answer, so an unused
        id cannot win (a first version without it learned a negative output_norm[0], and the
        exported model printed id 0 forever)."""
        return torch.cat([h @ self.emb().t(), -UNUSED * h[..., :1]], dim=-1)

    def make_heldout(self, level, n=48):
        p = D.Pages(10 ** 6 + level)
        return [p.sample(level) for _ in range(n)]

    def encode_target(self, text):
        ids = self.tok.encode(text) + [Q.IM_END]
        if any(i not in self.local for i in ids):
            return None
        return ids

    def prompt_ids(self, n_img):
        return TEMPLATE_HEAD + [-1] * n_img + [Q.VISION_END] + self.tok.encode(D.PROMPT) + ASSISTANT

    def batch(self, level, B):
        size = self.pages.size(level)
        imgs, targets = [], []
        while len(imgs) < B:
            img, text = self.pages.sample(level, size)
            t = self.encode_target(text)
            if t is None:
                continue
            imgs.append(Q.preprocess(img))
            targets.append(t)
        return torch.stack(imgs), targets

    def forward(self, pixels, seqs, vision=None, hidden=False):
        """pixels [B, 3, H, W]; seqs: global ids after the prompt (teacher forced). Returns logits over
        the used ids at every position (or the normed hidden states), and the prompt length.
        vision: (rows, grid) already computed."""
        rows, grid = vision or self.model.vision(pixels)
        n_img = rows.shape[1]
        prompt = self.prompt_ids(n_img)
        T = len(prompt) + max(len(s) for s in seqs)
        ids = torch.full((len(seqs), T), self.local[Q.IM_END], dtype=torch.long)
        for b, s in enumerate(seqs):
            full = [self.local[i] if i >= 0 else -1 for i in prompt + s]
            ids[b, :len(full)] = torch.tensor(full)
        pos = Q.positions(prompt + [0] * (T - len(prompt)), grid)[None].expand(len(seqs), -1, -1)
        return self.model.text(ids, rows, pos, emb=self.emb(), hidden=hidden), len(prompt)

    def train_step(self):
        a = self.args
        lv = self.level if random.random() < 0.7 or self.level == 0 else random.randrange(self.level)
        pixels, targets = self.batch(lv, a.batch)
        h, P = self.forward(pixels, [t[:-1] for t in targets], hidden=True)
        # the output matrix only at the positions that predict a target token
        hs = torch.cat([h[b, P - 1:P - 1 + len(t)] for b, t in enumerate(targets)])
        lab = torch.tensor([self.local[i] for t in targets for i in t])
        loss = F.cross_entropy(self.logits(hs), lab)
        warm = min(1.0, (self.step + 1) / 300)
        for g in self.opt.param_groups:
            g["lr"] = a.lr * warm
        self.opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for g in self.opt.param_groups for p in g["params"]], 1.0)
        self.opt.step()
        self.step += 1
        return float(loss)

    @torch.no_grad()
    def read(self, img, max_new=48):
        pixels = Q.preprocess(img)[None]
        vision = self.model.vision(pixels)
        out = []
        for _ in range(max_new):
            h, P = self.forward(pixels, [out], vision, hidden=True)
            k = int(self.logits(h[0, P - 1 + len(out)]).argmax())
            if k == len(self.used):  # an unused id would win: the exported model would print garbage
                return self.tok.decode(out) + "\ufffd"
            nxt = self.used[k]
            if nxt == Q.IM_END:
                break
            out.append(nxt)
        return self.tok.decode(out)

    def evaluate(self, level, n=48):
        self.model.eval()
        pairs = self.heldout[level][:n]
        errs = [D.cer(self.read(img), text) for img, text in pairs]
        self.model.train()
        return float(np.mean(errs))

    def state(self):
        return {"model": self.model.state_dict(), "emb_rest": self.emb_rest.detach(), "used": self.used,
                "opt": self.opt.state_dict(), "step": self.step, "level": self.level, "best": self.best,
                "text": TEXT, "vision": VISION, "emb0": EMB0, "rng": random.getstate(),
                "pages_rng": self.pages.rng.bit_generator.state}

    def load(self, path):
        s = torch.load(path)
        self.model.load_state_dict(s["model"])
        with torch.no_grad():
            self.emb_rest.copy_(s["emb_rest"])
        self.opt.load_state_dict(s["opt"])
        self.step, self.level, self.best = s["step"], s["level"], s["best"]
        random.setstate(s["rng"])
        self.pages.rng.bit_generator.state = s["pages_rng"]

    def init_from_pair(self, text_path, mmproj_path):
        """Weights from an exported pair (export.py, full or expanded compact text file): how a run
        resumes from the pair a repository ships, with a fresh optimizer."""
        import export
        m = export.read_pair(text_path, mmproj_path)
        sd = {k: v for k, v in m.state_dict().items() if k != "text.embd"}
        self.model.load_state_dict(sd, strict=False)
        rows = m.text.embd[torch.tensor(self.used)]
        with torch.no_grad():
            self.emb_rest.copy_(rows[:, 1:])

    def save(self, name):
        tmp = os.path.join(self.args.out, name + ".tmp")
        torch.save(self.state(), tmp)
        os.replace(tmp, os.path.join(self.args.out, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hours", type=float, default=100.0, help="stop after this much wall time")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--ckpt-min", type=float, default=5.0)
    ap.add_argument("--advance-cer", type=float, default=0.08, help="move up a level below this held-out CER")
    ap.add_argument("--init-from", nargs=2, metavar=("TEXT", "MMPROJ"),
                    help="start from an exported pair's weights (when OUT has no last.pt), e.g. assets/tiny-ocr's expanded")
    ap.add_argument("--level", type=int, default=0, help="the level a run started with --init-from begins at")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    tr = Trainer(args)
    last = os.path.join(args.out, "last.pt")
    if os.path.exists(last):
        tr.load(last)
        print(f"resumed at step {tr.step}, level {tr.level}", flush=True)
    elif args.init_from:
        tr.init_from_pair(*args.init_from)
        tr.level = args.level
        print(f"started from {args.init_from[0]}, level {tr.level}", flush=True)
    print(f"used ids {len(tr.used)}, params {sum(p.numel() for p in tr.model.parameters()) + tr.emb_rest.numel():,}", flush=True)
    t0 = time.time()
    t_ckpt = time.time()
    losses = []
    while time.time() - t0 < args.hours * 3600:
        losses.append(tr.train_step())
        if tr.step % 50 == 0:
            print(f"step {tr.step} level {tr.level} loss {np.mean(losses[-50:]):.3f} ({time.time() - t0:.0f} s)", flush=True)
        if tr.step % args.eval_every == 0:
            c = tr.evaluate(tr.level)
            rec = {"step": tr.step, "level": tr.level, "cer": c, "loss": float(np.mean(losses[-args.eval_every:])),
                   "time": time.time() - t0}
            print(json.dumps(rec), flush=True)
            with open(os.path.join(args.out, "log.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\n")
            key = str(tr.level)
            if c < tr.best.get(key, 9.0) and all(int(k) <= tr.level for k in tr.best):
                tr.best[key] = c
                tr.save("best.pt")
            if c < args.advance_cer and tr.level < 3:
                tr.level += 1
        if time.time() - t_ckpt > args.ckpt_min * 60:
            tr.save("last.pt")
            t_ckpt = time.time()
    tr.save("last.pt")


if __name__ == "__main__":
    main()
