#!/usr/bin/env python3
"""llama.cpp loads and runs what `ckjit synth` writes (not a CI test: needs the peer build).

For each preset: writes the pair at sharpness 1 and at a high sharpness, runs peer-cli (llama.cpp,
../shared/peer) for a text completion and an image prompt, and reports generated tokens, distinct
counts, top-1 probabilities and top-1/top-2 logit margins. Also loads the odd variants (head_dim !=
E/Hq, untied output, Q5_K/Q8_0 tensors, Q8_0 mmproj) on the tiny shape, and checks that the image
changes the answer. Exit 1 if anything fails to load, generates the wrong count, or collapses to
few distinct tokens.

usage: perf/synth_llama_check.py [--presets tiny,2b] [--sharpness 10] [-n 16] [--work DIR]
       env PEER=path/to/peer-cli (default: bash ../shared/peer/build.sh, cached build)
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peer_path():
    if os.environ.get("PEER"):
        return os.environ["PEER"]
    out = subprocess.run(["bash", os.path.join(ROOT, "..", "shared", "peer", "build.sh")], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("cannot build the peer: " + out.stderr[-2000:])
    return out.stdout.strip().splitlines()[-1]


def ckjit_path():
    return os.environ.get("CKJIT", os.path.join(ROOT, "build", "tools", "ckjit"))


def write_png(path, w, h, pixel):
    rows = b"".join(b"\x00" + bytes(c for x in range(w) for c in pixel(x, y)) for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def synth(out_dir, preset, seed, sharpness, extra=()):
    t0 = time.time()
    r = subprocess.run([ckjit_path(), "synth", "--preset", preset, "--seed", str(seed), "--sharpness", str(sharpness),
                        "-q", "--out", out_dir, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("ckjit synth failed: " + r.stdout + r.stderr)
    paths = [line.split()[0] for line in r.stdout.splitlines() if line.endswith("MiB")]
    return paths[0], paths[1], time.time() - t0


def peer(args):
    r = subprocess.run([PEER, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("peer-cli " + " ".join(args) + " failed:\n" + r.stderr[-3000:])
    return json.loads(r.stdout[r.stdout.index("{"):])


def summarize(j, n):
    toks = j["tokens"]
    top = j.get("top", [])
    p1 = [t[0]["prob"] for t in top]
    margins = [t[0]["logit"] - t[1]["logit"] for t in top]
    return {
        "n": len(toks),
        "distinct": len(set(toks)),
        "tokens": toks,
        "top1_median": statistics.median(p1) if p1 else None,
        "top1_min": min(p1) if p1 else None,
        "margin_median": statistics.median(margins) if margins else None,
        "margin_min": min(margins) if margins else None,
        "ok": len(toks) == n and len(set(toks)) >= max(2, n // 2),
    }


def fmt(s):
    return (f"{s['n']} tokens, {s['distinct']} distinct; top-1 prob median {s['top1_median']:.3g} (min {s['top1_min']:.3g}); "
            f"top-1/top-2 logit margin median {s['margin_median']:.3g} (min {s['margin_min']:.3g})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="tiny,2b")
    ap.add_argument("--sharpness", type=float, default=10.0)
    ap.add_argument("-n", type=int, default=16)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    global PEER
    PEER = peer_path()
    work = a.work or tempfile.mkdtemp(prefix="ckjit_synth_check_")
    img_a, img_b = os.path.join(work, "a.png"), os.path.join(work, "b.png")
    os.makedirs(work, exist_ok=True)
    write_png(img_a, 320, 240, lambda x, y: (x * 255 // 320, y * 255 // 240, (x ^ y) & 255))
    write_png(img_b, 320, 240, lambda x, y: (200, 30, 90) if (x // 40 + y // 40) % 2 else (10, 220, 40))
    failures = []
    n = str(a.n)
    prompt = "The quick brown fox jumps over the lazy dog. Once upon a time"
    for preset in a.presets.split(","):
        for sharp in (1.0, a.sharpness):
            d = os.path.join(work, f"{preset}-s{sharp:g}")
            text, mmproj, secs = synth(d, preset, 1, sharp)
            print(f"[{preset} sharpness {sharp:g}] synth {secs:.1f} s")
            try:
                s = summarize(peer(["complete", "-m", text, "-p", prompt, "-n", n, "--top-k", "2"]), a.n)
                print("  complete: " + fmt(s))
                ia = summarize(peer(["image", "-m", text, "--mmproj", mmproj, "--image", img_a, "-p", "Describe", "-n", n,
                                     "--top-k", "2"]), a.n)
                print("  image a:  " + fmt(ia))
                ib = summarize(peer(["image", "-m", text, "--mmproj", mmproj, "--image", img_b, "-p", "Describe", "-n", n,
                                     "--top-k", "2"]), a.n)
                print("  image b:  " + fmt(ib))
                differs = ia["tokens"] != ib["tokens"]
                print("  the image changes the answer: " + ("yes" if differs else "NO"))
                for what, r in (("complete", s), ("image a", ia), ("image b", ib)):
                    if not r["ok"]:
                        failures.append(f"{preset} s{sharp:g} {what}: {r['n']} tokens, {r['distinct']} distinct")
                if not differs:
                    failures.append(f"{preset} s{sharp:g}: two different images gave the same tokens")
            except RuntimeError as e:
                failures.append(f"{preset} s{sharp:g}: {e}")
            for f in (text, mmproj):
                os.remove(f)
    variants = [("head_dim 256 != E/Hq", ["--head-dim", "256"]), ("untied output", ["--untied-output"]),
                ("Q5_K/Q8_0 mix + q8_0 mmproj", ["--types", "mixed", "--mmproj-type", "q8_0"]),
                ("all at once", ["--head-dim", "256", "--untied-output", "--types", "mixed", "--mmproj-type", "q8_0"])]
    for name, extra in variants:
        d = os.path.join(work, "variant")
        text, mmproj, _ = synth(d, "tiny", 2, a.sharpness, extra)
        try:
            s = summarize(peer(["complete", "-m", text, "-p", prompt, "-n", n, "--top-k", "2"]), a.n)
            i = summarize(peer(["image", "-m", text, "--mmproj", mmproj, "--image", img_a, "-p", "Describe", "-n", n]), a.n)
            print(f"[tiny variant: {name}] complete: {s['n']} tokens, {s['distinct']} distinct; image: {i['n']} tokens, "
                  f"{i['distinct']} distinct")
            if not (s["ok"] and i["ok"]):
                failures.append(f"variant {name}: collapsed or short output")
        except RuntimeError as e:
            failures.append(f"variant {name}: {e}")
        for f in (text, mmproj):
            os.remove(f)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("all llama.cpp checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
