#!/usr/bin/python3
"""Reads held-out rendered pages with a trained GGUF pair through PyTorch, ckjit (and llama.cpp's
peer-cli with --peer) and prints each one's character error rate.

    /usr/bin/python3 tools/train_tiny_ocr/evaluate.py --ckjit build/tools/ckjit -m TEXT.gguf --mmproj MM.gguf
        [--pages 20] [--level 1] [--peer PEER | --peer-env NAME] [--max-cer 0.05] [--max-gap 0.005]
        [--cap CAP] [--fault NAME] [--json OUT]

Pages are data.py's, from seeds no training run draws (10^7 + level * 1000 + i). With --max-cer the
exit status is 1 when ckjit's CER exceeds it or differs from torch's by more than --max-gap (and,
with a peer, when llama.cpp's exceeds it). --cap runs ckjit with CKJIT_MAX_ISA=CAP. --fault NAME
runs ckjit with CKJIT_TEST_FAULT=NAME (graph/bridge.cpp: bridge.mrope, bridge.deepstack) and turns
the check around: it passes only when the broken run's CER is above --max-cer (the check can fail).
Exit 77 (ctest reports it skipped): no torch or PIL for this python, a cap this CPU does not run,
--peer-env naming an unset variable.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    from PIL import Image
except ImportError as e:
    print(f"evaluate: skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as D  # noqa: E402
import export  # noqa: E402
import qwen3vl as Q  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

HEAD = [Q.IM_START, 872, 198, Q.VISION_START]
TAIL = [Q.IM_END, 198, Q.IM_START, 77091, 198]


def pages(level, n):
    out = []
    for i in range(n):
        img, text = D.Pages(10 ** 7 + level * 1000 + i).sample(level)
        out.append((img, text))
    return out


@torch.no_grad()
def torch_read(model, tok, img, max_new=64):
    rows, grid = model.vision(Q.preprocess(img))
    prompt = HEAD + [-1] * rows.shape[0] + [Q.VISION_END] + tok.encode(D.PROMPT) + TAIL
    out = []
    for _ in range(max_new):
        seq = prompt + out
        logits = model.text(torch.tensor(seq), rows, Q.positions(seq, grid))
        nxt = int(logits[-1].argmax())
        if nxt == Q.IM_END:
            break
        out.append(nxt)
    return tok.decode(out)


def cli_read(cmd, what, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"evaluate: {what} failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout


# The flag of `ckjit info --json`'s capped "isa" that each CKJIT_MAX_ISA cap needs to run as itself.
CAP_FLAG = {"avx2": "avx2", "avxvnni": "avx_vnni", "avx512": "avx512f", "amx": "amx_usable"}


def cap_runs_here(ckjit, cap):
    if cap not in CAP_FLAG:
        raise SystemExit(f"evaluate: --cap {cap}: one of {', '.join(CAP_FLAG)}")
    info = cli_read([ckjit, "info", "--json"], "ckjit info", dict(os.environ, CKJIT_MAX_ISA=cap))
    return bool(json.loads(info)["isa"].get(CAP_FLAG[cap]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckjit", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--mmproj", required=True)
    ap.add_argument("--pages", type=int, default=20)
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--peer", help="llama.cpp's peer-cli: reads the same pages with the same files")
    ap.add_argument("--peer-env", help="the peer-cli's path is in this environment variable (unset: skipped)")
    ap.add_argument("--cap", help="CKJIT_MAX_ISA for the ckjit runs: avx2, avxvnni, avx512, amx")
    ap.add_argument("--fault", help="CKJIT_TEST_FAULT for the ckjit runs; passes when the CER goes above --max-cer")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--torch-save", help="write PyTorch's readings here (for --torch-from in other runs on the same pages)")
    ap.add_argument("--torch-from", help="PyTorch's readings of these pages, written by --torch-save, instead of running it")
    ap.add_argument("--max-cer", type=float)
    ap.add_argument("--max-gap", type=float, default=0.005)
    ap.add_argument("--json", help="write the per-page readings here")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the ckjit runs (e.g. CKJIT_MAX_ISA=avx2)")
    a = ap.parse_args()
    if a.peer_env:
        a.peer = os.environ.get(a.peer_env)
        if not a.peer:
            print(f"evaluate: skipped: {a.peer_env} (llama.cpp's peer-cli) is not set here")
            return 77
    if a.cap:
        a.env.append(f"CKJIT_MAX_ISA={a.cap}")
        if not cap_runs_here(a.ckjit, a.cap):
            print(f"evaluate: skipped: this CPU does not run the {a.cap} path")
            return 77
    if a.fault:
        a.env.append(f"CKJIT_TEST_FAULT={a.fault}")
        a.no_torch = True
        if a.max_cer is None:
            raise SystemExit("evaluate: --fault needs --max-cer")
    torch.set_num_threads(a.threads)
    tok = Tokenizer()
    # PyTorch's readings do not depend on ckjit's flags: several runs on the same files and pages
    # (the ISA caps) read them from one run's file instead of running the model again.
    key = {"model": os.path.abspath(a.model), "mmproj": os.path.abspath(a.mmproj), "level": a.level, "pages": a.pages}
    saved = None
    if a.torch_from and not a.no_torch:
        try:
            with open(a.torch_from) as f:
                saved = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit(f"evaluate: --torch-from {a.torch_from}: {e}")
        if saved.get("key") != key:
            raise SystemExit(f"evaluate: --torch-from {a.torch_from} holds readings of {saved.get('key')}, not of {key}")
    model = None if a.no_torch or saved else export.read_pair(a.model, a.mmproj, torch.float32)
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in a.env))
    rows = []
    with tempfile.TemporaryDirectory(prefix="ckjit-eval-") as tmp:
        for i, (img, text) in enumerate(pages(a.level, a.pages)):
            path = os.path.join(tmp, f"page{i}.png")
            Image.fromarray(img).save(path)
            r = {"page": i, "size": f"{img.shape[1]}x{img.shape[0]}", "truth": text}
            cmd = [a.ckjit, "run", "-m", a.model, "--mmproj", a.mmproj, "--image", path, "-p", D.PROMPT, "--chat",
                   "-n", "64", "-t", str(a.threads)]
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if res.returncode != 0:
                raise SystemExit(f"evaluate: ckjit failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-2000:]}")
            r["ckjit"] = res.stdout[:-1] if res.stdout.endswith("\n") else res.stdout
            if saved is not None:
                r["torch"] = saved["torch"][i]
            elif model is not None:
                r["torch"] = torch_read(model, tok, img)
            if a.peer:
                out = json.loads(cli_read([a.peer, "image", "-m", a.model, "--mmproj", a.mmproj, "--image", path,
                                           "-p", D.PROMPT, "--chat", "-n", "64"], "peer-cli"))
                r["llama.cpp"] = out["text"].removesuffix("<|im_end|>")  # peer-cli prints the end token
            rows.append(r)
    if a.torch_save and "torch" in rows[0]:
        with open(a.torch_save + ".tmp", "w") as f:
            json.dump({"key": key, "torch": [r["torch"] for r in rows]}, f)
        os.replace(a.torch_save + ".tmp", a.torch_save)
    who = [w for w in ("torch", "ckjit", "llama.cpp") if w in rows[0]]
    cers = {w: float(np.mean([D.cer(r[w], r["truth"]) for r in rows])) for w in who}
    for r in rows:
        print(f"{r['page']:>3} {r['size']:>8}  truth {r['truth']!r}")
        for w in who:
            print(f"{'':>13}{w:>9} {r[w]!r}  (CER {D.cer(r[w], r['truth']):.3f})")
    print("CER over", len(rows), "pages:", ", ".join(f"{w} {c:.4f}" for w, c in cers.items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cer": cers, "pages": rows}, f, indent=1)
    if a.fault:
        caught = cers["ckjit"] > a.max_cer
        print(f"evaluate: {'pass' if caught else 'FAIL'} (with CKJIT_TEST_FAULT={a.fault} ckjit's CER "
              f"{cers['ckjit']:.4f} must be above {a.max_cer})")
        return 0 if caught else 1
    if a.max_cer is not None:
        bad = cers["ckjit"] > a.max_cer or ("torch" in cers and abs(cers["ckjit"] - cers["torch"]) > a.max_gap)
        bad = bad or cers.get("llama.cpp", 0.0) > a.max_cer
        print(f"evaluate: {'FAIL' if bad else 'pass'} (ckjit CER <= {a.max_cer}"
              f"{f' and within {a.max_gap} of torch' if 'torch' in cers else ''}"
              f"{'; llama.cpp CER <= ' + str(a.max_cer) if 'llama.cpp' in cers else ''})")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
