#!/usr/bin/python3
"""ctest check of the trainer's tools: tokenizer.py gives ckjit's token ids (`ckjit run -v`) on 40
sampled training texts (one and several lines); export.py's compact text file expanded by `ckjit synth
--expand` is the full export; data.py's pages are the same bytes for the same seed and fit their
canvas; data.cer is the Levenshtein rate. Exit 77: no torch/PIL for this python."""
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import PIL  # noqa: F401
    import torch  # noqa: F401
except ImportError as e:
    print(f"check_tools: skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as D  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402


def check_compact(ckjit, tmp, template):
    """export.py's compact text file, expanded by `ckjit synth --expand`, is the full export: the same
    metadata and token_embd, the same logits."""
    import export
    import gguf_io as G
    import qwen3vl as Q
    model = export.randomize(Q.Qwen3VL(Q.TextConfig(n_layer=1), Q.VisionConfig(n_layer=1, deepstack_layers=[0])), 3)
    used = sorted({0, 13, 198, 872, 4418, 77091, 151643, 151644, 151645, 151652, 151653} | set(range(1000, 1400)))
    with torch.no_grad():
        unused = torch.ones(Q.N_VOCAB, dtype=torch.bool)
        unused[used] = False
        model.text.embd[unused] = torch.tensor([-16.0] + [0.0] * (model.text.c.n_embd - 1))
    model.text.c.n_deepstack = 1
    full, compact = os.path.join(tmp, "full.gguf"), os.path.join(tmp, "c.compact.gguf")
    export.write_pair(model, template, full, os.path.join(tmp, "mm.gguf"))
    export.write_pair(model, template, compact, os.path.join(tmp, "mm8.gguf"), used=used, mmproj_q8=True)
    subprocess.run([ckjit, "synth", "--expand", compact, "--out", os.path.join(tmp, "x")], check=True, capture_output=True)
    a, b = G.Reader(full), G.Reader(os.path.join(tmp, "x", "c.gguf"))
    same = {k: v.value for k, v in a.kv.items()} == {k: v.value for k, v in b.kv.items()}
    same = same and all(np.array_equal(a.tensor(n), b.tensor(n)) for n in a.tensors) and set(a.tensors) == set(b.tensors)
    logits = []
    for path in (full, os.path.join(tmp, "x", "c.gguf")):
        out = os.path.join(tmp, "l.bin")
        subprocess.run([ckjit, "run", "-m", path, "-p", "Read the text.", "-n", "3", "--ignore-eos", "--dump-logits", out],
                       check=True, capture_output=True)
        logits.append(open(out, "rb").read())
    ok = check_default_run(ckjit, tmp, compact, os.path.join(tmp, "mm8.gguf"))
    if not same or logits[0] != logits[1]:
        print(f"check_tools: the expanded compact file differs from the full export (metadata and tensors "
              f"{'equal' if same else 'differ'}, logits {'equal' if logits[0] == logits[1] else 'differ'})")
        return False
    return ok


def check_default_run(ckjit, tmp, compact, mmproj):
    """`ckjit run` without -m reads a trained dir (CKJIT_TRAINED_DIR): the compact file expanded once
    into the cache, the sample page read, its text and the character error rate printed (the rate is
    checked against data.cer of the printed reading); CKJIT_DEFAULT_PRESET still picks the random pair."""
    import shutil
    from PIL import Image
    tdir, cache = os.path.join(tmp, "trained"), os.path.join(tmp, "cache")
    os.makedirs(tdir)
    shutil.copy(compact, os.path.join(tdir, "tiny-ocr-Q8_0.compact.gguf"))
    shutil.copy(mmproj, os.path.join(tdir, "mmproj-tiny-ocr-q8_0.gguf"))
    img, text = D.Pages(7).sample(0)
    Image.fromarray(img).save(os.path.join(tdir, "sample.png"))
    with open(os.path.join(tdir, "sample.txt"), "w") as f:
        f.write(text + "\n")
    env = dict(os.environ, CKJIT_TRAINED_DIR=tdir, XDG_CACHE_HOME=cache)
    env.pop("CKJIT_DEFAULT_PRESET", None)
    ok = True
    for attempt in range(2):
        r = subprocess.run([ckjit, "run", "-n", "8"], capture_output=True, text=True, env=env)
        expanded = "expanding the trained tiny OCR model" in r.stderr
        m = re.search(r"^page text:  (.*)\ncharacter error rate: ([0-9.]+) %", r.stderr, re.M)
        if r.returncode != 0 or not m or m.group(1) != text or expanded != (attempt == 0):
            print(f"check_tools: default run {attempt}: exit {r.returncode}, expanded {expanded}:\n{r.stderr[-1500:]}")
            ok = False
            continue
        want = 100 * D.cer(r.stdout[:-1], text)
        if abs(float(m.group(2)) - want) > 0.051:
            print(f"check_tools: default run printed CER {m.group(2)} %, data.cer gives {want:.2f} % for {r.stdout!r}")
            ok = False
    env["CKJIT_DEFAULT_PRESET"] = "tiny"
    r = subprocess.run([ckjit, "run", "-n", "2"], capture_output=True, text=True, env=env)
    if r.returncode != 0 or "random weights (tiny preset)" not in r.stderr:
        print(f"check_tools: CKJIT_DEFAULT_PRESET=tiny did not run the random pair:\n{r.stderr[-1500:]}")
        ok = False
    return ok


def main():
    ckjit = sys.argv[1]
    ok = True
    tok = Tokenizer()
    with tempfile.TemporaryDirectory(prefix="ckjit-tools-") as tmp:
        subprocess.run([ckjit, "synth", "--preset", "tiny", "--out", tmp, "--name", "t"], check=True, capture_output=True)
        model = os.path.join(tmp, "t-Q4_K_M.gguf")
        pages = D.Pages(99)
        texts = [pages.sample(lv)[1] for lv in range(4) for _ in range(10)]
        for text in texts:
            r = subprocess.run([ckjit, "run", "-m", model, "-p", text, "-n", "1", "-v", "-t", "1"],
                               capture_output=True, text=True)
            m = re.search(r"^prompt ids: (.*)$", r.stderr, re.M)
            want = [int(v) for v in m.group(1).split()] if m else None
            if tok.encode(text) != want:
                print(f"check_tools: {text!r}: tokenizer.py {tok.encode(text)} vs ckjit {want}")
                ok = False
            if tok.decode(tok.encode(text)) != text:
                print(f"check_tools: {text!r} does not survive encode + decode")
                ok = False
        ok = check_compact(ckjit, tmp, model) and ok
    a, b = D.Pages(5).sample(3), D.Pages(5).sample(3)
    if not (np.array_equal(a[0], b[0]) and a[1] == b[1]):
        print("check_tools: the same seed gave two different pages")
        ok = False
    for lv in range(4):
        img, text = D.Pages(lv).sample(lv)
        H, W = img.shape[:2]
        if W % 32 or H % 32 or W * H < 8 * 1024 or not text.strip():
            print(f"check_tools: level {lv}: a {W}x{H} page with text {text!r}")
            ok = False
    for hyp, ref, want in (("abc", "abc", 0.0), ("", "abcd", 1.0), ("axc", "abc", 1 / 3), ("abcd", "abc", 1 / 3)):
        if abs(D.cer(hyp, ref) - want) > 1e-12:
            print(f"check_tools: cer({hyp!r}, {ref!r}) = {D.cer(hyp, ref)}, want {want}")
            ok = False
    print(f"check_tools: {'pass' if ok else 'FAIL'} ({len(texts)} texts tokenized like ckjit)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
