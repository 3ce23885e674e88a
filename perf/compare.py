#!/usr/bin/env python3
"""The driver of perf/compare (see there): runs ckjit and llama.cpp's peer-cli alternately on the
same files, prints medians, min-max, ratios, roofline shares and the targets, and appends the
table to perf/RESULTS.md. Peak RSS is the child's own (wait4), wall time the parent's clock."""
import argparse, datetime, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

import prompt_words  # perf/prompt_words.py, next to this file

PAGE_PROMPT = "Read the text on this page."


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def run_child(cmd, out_path, err_path):
    """Runs cmd as a fresh process; returns (wall s, peak RSS MiB). Fails loudly on a non-zero exit."""
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = open(err_path).read()[-2000:]
        sys.exit(f"compare: {' '.join(cmd)} exited with {code}:\n{tail}")
    return wall, ru.ru_maxrss / 1024.0


def parse_profile(text):
    """ckjit --profile's machine lines: {phase: {ms, rows, macs, weight_bytes, ops: {op: (ms, macs, bytes)}}}."""
    phases = {}
    for line in text.splitlines():
        if not line.startswith("profile-phase: "):
            continue
        fields = line.split()[1:]
        ph = {"ops": {}}
        name = fields[0]
        for f in fields[1:]:
            k, v = f.split("=", 1)
            if ":" in v:
                ms, macs, b = v.split(":")
                ph["ops"][k] = (float(ms), float(macs), float(b))
            else:
                ph[k] = float(v)
        phases[name] = ph
    return phases


def parse_ckjit(err):
    t = open(err).read()
    r = {}
    m = re.search(r"timing: load ([\d.]+) ms \| prefill (\d+) tok ([\d.]+) ms .*?\| decode (\d+) tok ([\d.]+) ms", t)
    if not m:
        sys.exit(f"compare: no timing line in {err}:\n{t[-2000:]}")
    r["load_ms"], r["n_prompt"], r["prefill_ms"] = float(m.group(1)), int(m.group(2)), float(m.group(3))
    r["n_decode"], r["decode_ms"] = int(m.group(4)), float(m.group(5))
    ph = re.search(r"phases: load ([\d.]+) ms \| repack \+ JIT ([\d.]+) ms \| image encode ([\d.]+) ms .*?(\d+) rows\) \| "
                   r"prefill [\d.]+ ms \(image rows ([\d.]+) ms, text rows ([\d.]+) ms\)", t)
    if ph:
        r["load_ms"] = float(ph.group(1)) + float(ph.group(2))
        r["encode_ms"], r["n_img"] = float(ph.group(3)), int(ph.group(4))
        r["img_prefill_ms"], r["text_prefill_ms"] = float(ph.group(5)), float(ph.group(6))
    r["ttft_ms"] = r.get("encode_ms", 0.0) + r["prefill_ms"]  # the encode includes image preprocessing
    r["profile"] = parse_profile(t)
    r["profile_text"] = [l for l in t.splitlines() if l.startswith("profile:")]
    return r


def parse_peer(out):
    j = json.loads(open(out).read())
    tm = j["timings"]
    return {"load_ms": j["load_ms"] + j.get("mm_init_ms", 0.0), "n_prompt": j["prompt_n_tokens"],
            "prefill_ms": tm["text_decode_ms"] + tm["image_decode_ms"], "n_decode": tm["gen_decode_n"], "decode_ms": tm["gen_decode_ms"],
            "encode_ms": tm["image_encode_ms"], "img_prefill_ms": tm["image_decode_ms"],
            "text_prefill_ms": tm["text_decode_ms"], "n_img": j.get("n_img_tokens", 0),
            "ttft_ms": tm["prompt_ms"]}  # from tokenizing (image preprocessing included) to the last prefill


def tps(n, ms):
    return n / ms * 1e3 if ms > 0 else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--peer", default=None, help="peer-cli to use (default: tools/peer.sh, which checks it runs the pair here)")
    ap.add_argument("--preset", default="2b", choices=["tiny", "2b", "4b", "8b"])
    ap.add_argument("--threads", type=int, default=0, help="0: ckjit's CPU budget")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=64)
    ap.add_argument("--page-tg", type=int, default=128)
    ap.add_argument("--page-side", type=int, default=1024)
    ap.add_argument("--cases", default="text,empty,page")
    ap.add_argument("--no-kernels", action="store_true", help="skip the Gate-Up SwiGLU kernel run (bench_kernels)")
    ap.add_argument("--also", action="append", default=[],
                    help="another ckjit side: extra `ckjit run` flags, e.g. --also='--attention llama' (repeatable)")
    ap.add_argument("--report", default=None,
                    help="after the timed rounds, one more ckjit run per case with `ckjit run --report DIR/CASE` (not timed)")
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--results", default=None)
    a = ap.parse_args()
    ck = os.path.join(a.build, "tools", "ckjit")
    cases = a.cases.split(",")
    rounds = max(3, a.rounds)
    info = sh([ck, "info"]).splitlines()[0]
    if a.threads <= 0:
        m = re.search(r"budget (\d+) thr", info)
        a.threads = int(m.group(1)) if m else 2
    T = str(a.threads)
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "ckjit")
    pair_dir = os.path.join(cache, f"default-{a.preset}")
    model = os.path.join(pair_dir, f"{a.preset}-Q4_K_M.gguf")
    mmproj = os.path.join(pair_dir, f"mmproj-{a.preset}-f16.gguf")
    if not (os.path.exists(model) and os.path.exists(mmproj)):
        need = {"tiny": 0.1, "2b": 2.0, "4b": 3.5, "8b": 6.5}[a.preset]
        free = shutil.disk_usage(cache if os.path.exists(cache) else os.path.expanduser("~")).free / 2**30
        if free < need + 1:
            sys.exit(f"compare: {a.preset} pair needs ~{need} GB on disk, {free:.1f} GB free")
        print(f"compare: synthesizing the {a.preset} pair into {pair_dir} (once)", file=sys.stderr)
        tmp = pair_dir + f".partial-{os.getpid()}"
        subprocess.run([ck, "synth", "--preset", a.preset, "--seed", "1", "--sharpness", "10", "--out", tmp], check=True)
        os.makedirs(cache, exist_ok=True)
        os.replace(tmp, pair_dir)
    # The peer maps the files, ckjit reads them: both need the pair in RAM, plus their own copies.
    mem_kib = int(re.search(r"MemAvailable:\s+(\d+)", open("/proc/meminfo").read()).group(1))
    pair_gib = (os.path.getsize(model) + os.path.getsize(mmproj)) / 2**30
    if mem_kib / 2**20 < 2.5 * pair_gib + 1:
        sys.exit(f"compare: the {a.preset} pair ({pair_gib:.1f} GiB) needs about {2.5 * pair_gib + 1:.0f} GiB free; "
                 f"{mem_kib / 2**20:.1f} GiB available")
    if not a.peer:  # the peer that runs this model here (tools/peer.sh says on stderr if it is not the default build)
        a.peer = subprocess.run(["bash", os.path.join(a.root, "tools", "peer.sh"), model], check=True,
                                stdout=subprocess.PIPE, text=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="ckjit-compare-")
    page = os.path.join(work, "page.png")
    subprocess.run([os.path.join(a.build, "perf", "make_page"), page, str(a.page_side)], check=True)
    prompt = os.path.join(work, "prompt.txt")
    open(prompt, "w").write(prompt_words.prompt(a.pp) + "\n")
    for f in (model, mmproj):  # a warm page cache for both (the load target is on a warm cache)
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass

    def roofline():
        out = sh([os.path.join(a.build, "perf", "bench_roofline"), "--threads", T])
        m = re.search(r"roofline: .*", out).group(0)
        return {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", m)}, out.splitlines()[1]

    loads = [open("/proc/loadavg").read().strip()]
    print(f"machine: {info}")
    print(f"model: {model} | mmproj: {mmproj} | threads {T} | rounds {rounds} | load average {loads[0]}")
    print(f"peer: {a.peer}" + (" (llama.cpp built without AMX: its AMX build crashes here, tools/peer.sh)" if "-noamx/" in a.peer else ""))
    roof0, roof_line = roofline()
    print(roof_line)

    ckargs = {"text": ["-f", prompt, "-n", str(a.tg + 1), "-c", str(a.pp + a.tg + 64)],
              "empty": ["-p", "the", "-n", str(a.tg + 1), "-c", str(a.tg + 64)],
              "page": ["--mmproj", mmproj, "--image", page, "-p", PAGE_PROMPT, "-n", str(a.page_tg + 1), "-c", "4096"]}
    # ckjit's sides: its default, then each --also variant (extra `ckjit run` flags), all against llama.cpp.
    variants = [("ckjit", [])] + [(f"ckjit {v}", v.split()) for v in a.also]
    sides = [name for name, _ in variants] + ["llama.cpp"]
    res = {c: {side: [] for side in sides} for c in cases}
    for r in range(1, rounds + 1):
        for c in cases:
            for si, side in enumerate(sides):
                out, err = os.path.join(work, f"{c}.{si}.{r}.out"), os.path.join(work, f"{c}.{si}.{r}.err")
                if side != "llama.cpp":
                    cmd = [ck, "run", "-m", model, *ckargs[c], "--ignore-eos", "-t", T, "--profile", *variants[si][1]]
                else:
                    cmd = [a.peer, "image" if c == "page" else "complete", "-m", model, *ckargs[c], "--ignore-eos", "-t", T]
                wall, rss = run_child(cmd, out, err)
                d = parse_peer(out) if side == "llama.cpp" else parse_ckjit(err)
                d["wall_s"], d["rss_mib"] = wall, rss
                res[c][side].append(d)
            for side in sides[:-1]:
                if res[c][side][-1]["n_prompt"] != res[c]["llama.cpp"][-1]["n_prompt"]:
                    sys.exit(f"compare: {c}: the prompts differ ({res[c][side][-1]['n_prompt']} vs "
                             f"{res[c]['llama.cpp'][-1]['n_prompt']} rows)")
        print(f"round {r} done, load average {open('/proc/loadavg').read().split(' ')[0]}", flush=True)
    if a.report:
        for c in cases:
            d = os.path.join(a.report, c)
            run_child([ck, "run", "-m", model, *ckargs[c], "--ignore-eos", "-t", T, "--report", d],
                      os.path.join(work, f"{c}.report.out"), os.path.join(work, f"{c}.report.err"))
            print(f"report: {d}/report.html", flush=True)
    roof1, _ = roofline()
    roof = {k: max(roof0[k], roof1[k]) for k in roof0}  # the best seen: other tenants only ever lower it
    loads.append(open("/proc/loadavg").read().strip())

    # Each metric: (case, label, unit, function of one run, higher is better).
    def decode_tps(d):
        return tps(d["n_decode"], d["decode_ms"])
    metrics = []
    if "text" in cases:
        metrics += [("text", f"pp{a.pp} prefill", "tok/s", lambda d: tps(d["n_prompt"], d["prefill_ms"]), True),
                    ("text", f"tg{a.tg} after {a.pp}-token prompt", "tok/s", decode_tps, True),
                    ("text", "peak RSS, text", "MiB", lambda d: d["rss_mib"], False)]
    if "empty" in cases:
        metrics += [("empty", f"tg{a.tg} from an empty cache", "tok/s", decode_tps, True)]
    if "page" in cases:
        metrics += [("page", "page: image encode", "s", lambda d: d["encode_ms"] / 1e3, False),
                    ("page", "page: image-row prefill", "s", lambda d: d["img_prefill_ms"] / 1e3, False),
                    ("page", "page: time to first token", "s", lambda d: d["ttft_ms"] / 1e3, False),
                    ("page", f"page: {a.page_tg} decode tokens", "tok/s", decode_tps, True),
                    ("page", f"page: encode + prefill + {a.page_tg} tokens", "s",
                     lambda d: (d["ttft_ms"] + d["decode_ms"]) / 1e3, False),
                    ("page", "page: process wall time", "s", lambda d: d["wall_s"], False),
                    ("page", "load: model + mmproj to the first op", "s", lambda d: d["load_ms"] / 1e3, False),
                    ("page", "peak RSS, page", "MiB", lambda d: d["rss_mib"], False)]
    def stat(case, side, fn):
        v = [fn(d) for d in res[case][side]]
        return statistics.median(v), min(v), max(v)
    rows, med = [], {}  # med[(side, label)] = (median, llama.cpp's median, ratio)
    for case, label, unit, fn, higher in metrics:
        lm, llo, lhi = stat(case, "llama.cpp", fn)
        cells = []
        for side in sides[:-1]:
            cm, clo, chi = stat(case, side, fn)
            ratio = cm / lm if lm else 0.0
            med[(side, label)] = (cm, lm, ratio)
            cells.append(f"{cm:.2f} ({clo:.2f}-{chi:.2f}) = {ratio:.2f}x")
        rows.append(f"| {label} ({unit}{'' if higher else ', lower is better'}) | " + " | ".join(cells) +
                    f" | {lm:.2f} ({llo:.2f}-{lhi:.2f}) |")

    # Rooflines from ckjit's own work counts (MACs, weight bytes per token) of the median run.
    def median_run(case, side, key):
        runs = sorted(res[case][side], key=key)
        return runs[len(runs) // 2]
    roof_rows = []
    def share(label, case, phase, ms_of, ceiling, kind):
        prof = median_run(case, "ckjit", ms_of)["profile"].get(phase)
        if not prof:
            return
        unit, ceil = ("GMAC/s", roof[ceiling]) if kind == "macs" else ("GB/s", roof["dram_gbs"])
        work_units = prof["macs"] if kind == "macs" else prof["weight_bytes"]
        cells = []
        for side in sides:
            rate = work_units / (ms_of(median_run(case, side, ms_of)) / 1e3) / 1e9
            cells.append(f"{rate:.1f} {unit} = {100 * rate / ceil:.0f}%")
        roof_rows.append(f"| {label} | " + " | ".join(cells) + f" | {ceiling if kind == 'macs' else 'dram'} {ceil:.1f} |")
    if "text" in cases:
        share(f"pp{a.pp} prefill", "text", "text_prefill", lambda d: d["prefill_ms"], "int8_gmacs", "macs")
        share(f"tg{a.tg} after the prompt (weights only)", "text", "decode", lambda d: d["decode_ms"], None, "bytes")
    if "empty" in cases:
        share(f"tg{a.tg} from an empty cache", "empty", "decode", lambda d: d["decode_ms"], None, "bytes")
    if "page" in cases:
        share("page: image encode", "page", "encode", lambda d: d["encode_ms"], "f32_gmacs", "macs")
        share("page: image-row prefill", "page", "image_prefill", lambda d: d["img_prefill_ms"], "int8_gmacs", "macs")

    # The kernel target: Gate-Up SwiGLU at the 8B prefill shape against the int8 mix's ceiling.
    kernel_line = None
    if not a.no_kernels:
        out = sh([os.path.join(a.build, "perf", "bench_kernels"), "--only", "prefill-8b", "--no-ggml", "--runs", "3",
                  "--threads", T])
        m = re.search(rf"ckjit\s+{T} threads?:.*", out)
        kernel_line = m.group(0).strip() if m else "bench_kernels printed no result: " + out.strip().splitlines()[-1]

    avx512 = "avx512" in info
    pp_target = 2.5 if avx512 else 2.0
    targets = []
    def target(label, want, check):
        cells = []
        for side in sides[:-1]:
            ok, shown = check(side)
            cells.append(f"{shown}: {'holds' if ok else 'MISSED'}")
        targets.append(f"| {label} | {want} | " + " | ".join(cells) + " |")
    def ratio_check(label, good):
        return lambda side: (good(med[(side, label)][2]), f"{med[(side, label)][2]:.2f}x")
    if "text" in cases:
        target(f"pp{a.pp} prefill", f">= {pp_target}x", ratio_check(f"pp{a.pp} prefill", lambda r: r >= pp_target))
        target(f"tg{a.tg} after the prompt", ">= 1.2x", ratio_check(f"tg{a.tg} after {a.pp}-token prompt", lambda r: r >= 1.2))
    if "empty" in cases:
        def dram_share(side):
            ckd = median_run("empty", side, lambda d: d["decode_ms"])
            prof = ckd["profile"].get("decode", {})
            pct = prof.get("weight_bytes", 0) / (ckd["decode_ms"] / 1e3) / 1e9 / roof["dram_gbs"] if ckd["decode_ms"] else 0
            return pct >= 0.9, f"{100 * pct:.0f}%"
        target(f"tg{a.tg} from an empty cache", ">= 90% of DRAM read", dram_share)
    if "page" in cases:
        target("image encode", ">= 3x (speed)", lambda side: (1 / med[(side, "page: image encode")][2] >= 3,
                                                               f"{1 / med[(side, 'page: image encode')][2]:.2f}x"))
        target("image-row prefill", ">= 2x (speed)", lambda side: (1 / med[(side, "page: image-row prefill")][2] >= 2,
                                                                    f"{1 / med[(side, 'page: image-row prefill')][2]:.2f}x"))
        target("whole page", "<= 0.4x llama.cpp's time",
               ratio_check(f"page: encode + prefill + {a.page_tg} tokens", lambda r: r <= 0.4))
        target("load (model + mmproj, warm cache)", "<= 1 s", lambda side: (med[(side, "load: model + mmproj to the first op")][0] <= 1.0,
                                                                          f"{med[(side, 'load: model + mmproj to the first op')][0]:.2f} s"))
        target("peak RSS (page)", "<= 0.75x llama.cpp's", ratio_check("peak RSS, page", lambda r: r <= 0.75))

    # ckjit's per-op profile of the median run of each phase, for each ckjit side.
    prof_rows = []
    for side in sides[:-1]:
        for case, phase, ms_of in (("text", "text_prefill", lambda d: d["prefill_ms"]), ("text", "decode", lambda d: d["decode_ms"]),
                                   ("empty", "decode", lambda d: d["decode_ms"]), ("page", "encode", lambda d: d["encode_ms"]),
                                   ("page", "image_prefill", lambda d: d["img_prefill_ms"]), ("page", "decode", lambda d: d["decode_ms"])):
            if case not in cases:
                continue
            prof = median_run(case, side, ms_of)["profile"].get(phase)
            if not prof:
                continue
            ops = sorted(prof["ops"].items(), key=lambda kv: -kv[1][0])
            cells = []
            for op, (ms, macs, b) in ops[:6]:
                extra = ""
                if macs and phase != "decode":
                    ceil = roof["f32_gmacs"] if phase == "encode" else roof["int8_gmacs"]
                    extra = f", {macs / ms / 1e6:.0f} GMAC/s = {100 * macs / ms / 1e6 / ceil:.0f}%"
                elif b and phase == "decode":
                    extra = f", {b / ms / 1e6:.1f} GB/s = {100 * b / ms / 1e6 / roof['dram_gbs']:.0f}%"
                cells.append(f"{op} {100 * ms / prof['ms']:.0f}%{extra}")
            prof_rows.append(f"| {side} | {case} / {phase} | {prof['ms']:.0f} ms | " + "; ".join(cells) + " |")

    commit = sh(["git", "-C", a.root, "rev-parse", "--short", "HEAD"]).strip()
    dirty = sh(["git", "-C", a.root, "status", "--porcelain", "--untracked-files=no"]).strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = [f"## perf/compare {now}, commit {commit}{' (+ local changes)' if dirty else ''}, preset {a.preset}", "",
          f"Machine: `{info}`. Threads {T}, {rounds} rounds alternated ({', '.join(sides)}) in fresh processes; "
          f"load average {loads[0].split(' ')[0]} at start, {loads[1].split(' ')[0]} at end. Peer: peer-cli (llama.cpp b10256 + mtmd"
          + (", built without AMX: its AMX matmul crashes on this machine, tools/peer.sh" if "-noamx/" in a.peer else "") + ").",
          f"Ceilings measured in this run (bench_roofline, best of the runs before and after): int8 {roof['int8_gmacs']:.1f} GMAC/s, "
          f"f32 FMA {roof['f32_gmacs']:.1f} GMAC/s, bf16 {roof['bf16_gmacs']:.1f} GMAC/s, DRAM read {roof['dram_gbs']:.1f} GB/s.", "",
          "| case | " + " | ".join(f"{side} median (min-max) = / llama.cpp" for side in sides[:-1]) + " | llama.cpp median (min-max) |",
          "|---" * (len(sides) + 1) + "|", *rows, "",
          "Roofline shares (work counted by ckjit's profile: MACs of the phase, or weight bytes read per decode step):", "",
          "| phase | " + " | ".join(sides) + " | ceiling |", "|---" * (len(sides) + 2) + "|", *roof_rows, ""]
    if kernel_line:
        md += [f"Gate-Up SwiGLU at the 8B prefill shape (bench_kernels): `{kernel_line}`", ""]
    md += ["Targets (ratios ckjit / llama.cpp unless marked speed):", "",
           "| target | wanted | " + " | ".join(sides[:-1]) + " |", "|---" * (len(sides) + 1) + "|", *targets, "",
           "ckjit's per-op profile (median run; share of the phase, rate and share of its ceiling):", "",
           "| side | case / phase | time | top ops |", "|---|---|---|---|", *prof_rows, ""]
    text = "\n".join(md)
    print(text)
    if not a.no_append:
        path = a.results or os.path.join(a.root, "perf", "RESULTS.md")
        with open(path, "a") as f:
            f.write("\n" + text)
        print(f"compare: appended to {path}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
