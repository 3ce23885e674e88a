#!/usr/bin/env python3
"""A soak of `ckjit serve` under mixed load and faults (loopback only, bounded in time and count).

N clients (default 4 x --parallel) send for --seconds a random mix (seeded): seeded text and image
chats whose answers must equal a single-client run's, streams read whole or slowly, streams dropped
mid-way, bodies cut off, malformed JSON, an image over the pixel limit, image-limit variants (cache
misses), and bursts past --max-queue. Checked: every completed deterministic answer equals the
reference, no 5xx but 503 (with Retry-After), no deadlock (every request ends; the server answers
/health at the end), and RSS flat after warm-up (no leak). Recorded: counts per kind and status,
p50 / p95 latency of the completed chats, RSS at warm-up and at the end.

  python3 perf/serve_soak.py --ckjit build/tools/ckjit [--seconds 600] [--parallel 2] [--clients N]
                             [-m MODEL --mmproj MMPROJ] [--image PNG] [--seed 1] [--hostile N]

--hostile N adds N hostile clients beside the normal ones (tools/serve/README.md, "Hostile
clients"): slow clients that drip a request (each must be cut off by --request-timeout), JSON
nested 10^5 deep, chunked and compressed bodies, header floods, pipelined floods, junk paths and
foreign Host names. Each must get its refusal (or a close), never a 5xx but 503, and the normal
clients' checks hold as without them; compare their p95 with a run without --hostile.

Exit status 0 when every check holds. CI runs it for 60 s on the tiny pair (tests/serve); a 10-minute
run belongs in perf/RESULTS-serve.md with the machine (`ckjit info`) and the load average.
"""
import argparse
import atexit
import base64
import http.client
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib


def png_bytes(width, height):
    """A grey PNG of width x height (its header is all an over-limit test needs)."""
    raw = b"".join(b"\x00" + bytes((x * 7 + y * 3) % 256 for x in range(width)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def huge_png_header():
    """A PNG whose header claims 100000 x 100000 pixels: refused from the header."""
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr
            + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr) & 0xFFFFFFFF))


def data_uri(png):
    return "data:image/png;base64," + base64.b64encode(png).decode()


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Soak:
    def __init__(self, args, port, pid):
        self.args, self.port, self.pid = args, port, pid
        self.lock = threading.Lock()
        self.counts = {}        # (kind, status) -> n
        self.latencies = []     # seconds, completed chats
        self.failures = []      # what went wrong, for the report
        self.reference = {}     # request key -> content of the single-client run
        with open(args.image, "rb") as f:
            self.image = f.read()

    # ---- requests ----
    def body(self, key):
        """The deterministic requests: their answers are compared with the reference."""
        kind, seed = key
        if kind == "text":
            msgs = [{"role": "user", "content": f"Tell me about number {seed}"}]
        else:
            msgs = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_uri(self.image)}},
                                                 {"type": "text", "text": "Read the page."}]}]
        return {"messages": msgs, "max_tokens": 12, "seed": seed, "temperature": 0.7}

    def post(self, body, timeout=120, raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("POST", "/v1/chat/completions", body=raw if raw is not None else json.dumps(body),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, r.getheader("Retry-After"), r.read()
        finally:
            c.close()

    def record(self, kind, status):
        with self.lock:
            self.counts[(kind, status)] = self.counts.get((kind, status), 0) + 1

    def fail(self, what):
        with self.lock:
            self.failures.append(what)

    def check_status(self, kind, status, retry_after, allowed):
        self.record(kind, status)
        if status == 503 and retry_after is None:
            self.fail(f"{kind}: 503 without Retry-After")
        if status == 503:
            time.sleep(random.uniform(0.1, 0.4))  # a client backs off (less than Retry-After: the line moves fast)
        if status not in allowed and status != 503:
            self.fail(f"{kind}: HTTP {status}, expected one of {sorted(allowed)}")

    def chat(self, key, stream=False, slow=False):
        body = self.body(key)
        kind = key[0] + ("-stream" if stream else "") + ("-slow" if slow else "")
        t0 = time.monotonic()
        if not stream:
            status, ra, data = self.post(body)
            self.check_status(kind, status, ra, {200})
            if status == 200:
                content = json.loads(data)["choices"][0]["message"]["content"]
                self.compare(key, content, kind)
                with self.lock:
                    self.latencies.append(time.monotonic() - t0)
            return
        body["stream"] = True
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            c.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                self.check_status(kind, r.status, r.getheader("Retry-After"), {200})
                r.read()
                return
            text, done = "", False
            for line in r:
                if slow:
                    time.sleep(0.02)
                line = line.decode().strip()
                if not line.startswith("data: "):
                    continue
                payload = line[6:]
                if payload == "[DONE]":
                    done = True
                    break
                event = json.loads(payload)
                if "error" in event:
                    self.record(kind, event["error"].get("code", "error"))
                    if event["error"].get("code") != "shutting_down":
                        self.fail(f"{kind}: error event {event['error']}")
                    return
                for ch in event.get("choices", []):
                    text += ch.get("delta", {}).get("content") or ""
            self.record(kind, 200 if done else "cut")
            if not done:
                self.fail(f"{kind}: stream ended without [DONE]")
            else:
                self.compare(key, text, kind)
                with self.lock:
                    self.latencies.append(time.monotonic() - t0)
        finally:
            c.close()

    def compare(self, key, content, kind):
        want = self.reference.get(key)
        if want is not None and content != want:
            self.fail(f"{kind} {key}: {content!r} differs from the single-client answer {want!r}")

    def dropped_stream(self, key):
        body = self.body(key)
        body["stream"] = True
        body["max_tokens"] = 200
        body["ignore_eos"] = True
        s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        data = json.dumps(body).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        s.recv(256)  # the first bytes of the stream (or an error), then gone
        s.close()
        self.record("dropped-stream", "closed")

    def cut_body(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        data = json.dumps(self.body(("text", 1))).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(data) + 500}\r\n\r\n".encode() + data[: len(data) // 2])
        s.close()
        self.record("cut-body", "closed")

    def malformed(self):
        status, ra, _ = self.post(None, raw="{\"messages\": [ {\"role\": \"user\", ")
        self.check_status("malformed", status, ra, {400})

    def oversized(self):
        body = self.body(("image", 1))
        body["messages"][0]["content"][0]["image_url"]["url"] = data_uri(huge_png_header())
        status, ra, _ = self.post(body)
        self.check_status("oversized-image", status, ra, {400, 413})

    def cache_miss(self, rng):
        body = self.body(("image", 1))
        body["image_max_tokens"] = rng.choice([8, 12, 16, 24])
        status, ra, _ = self.post(body)
        self.check_status("image-limit", status, ra, {200})

    # ---- hostile clients (--hostile) ----
    def raw(self, data, read_s=10.0):
        """Sends raw bytes; the answer's status (None: closed without one)."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=read_s)
        try:
            try:
                s.sendall(data)
            except OSError:
                pass  # the server may refuse before the whole body is sent
            out = b""
            while b"\r\n" not in out:
                chunk = s.recv(4096)
                if not chunk:
                    break
                out += chunk
            m = re.match(rb"HTTP/1\.1 (\d{3})", out)
            return int(m.group(1)) if m else None
        except OSError:
            return None
        finally:
            s.close()

    def hostile_status(self, kind, status, allowed):
        self.record(kind, status if status is not None else "closed")
        if status is not None and status not in allowed and status != 503:
            self.fail(f"{kind}: HTTP {status}, expected one of {sorted(allowed)} or a close")

    def slow_drip(self, rng):
        """A request whose bytes come one every second: cut off at --request-timeout."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=self.args.request_timeout + 30)
        t0 = time.monotonic()
        try:
            s.sendall(b"GET /hea")
            s.settimeout(1.0)
            while time.monotonic() - t0 < self.args.request_timeout + 20:
                try:
                    if s.recv(4096) == b"":
                        break  # closed by the server
                except socket.timeout:
                    try:
                        s.sendall(b"l")
                    except OSError:
                        break
                except OSError:
                    break
            held = time.monotonic() - t0
        finally:
            s.close()
        self.record("hostile-slow-drip", "cut")
        if held > self.args.request_timeout + 10:
            self.fail(f"a slow client held its connection {held:.0f} s (--request-timeout {self.args.request_timeout})")

    def hostile(self, rng):
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        pick = rng.randrange(8)
        if pick == 0:
            self.slow_drip(rng)
        elif pick == 1:
            n = 100000
            body = b'{"messages":[{"role":"user","content":"hi"}],"stop":' + b"[" * n + b"]" * n + b"}"
            self.hostile_status("hostile-deep-json", self.raw(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body), {400})
        elif pick == 2:
            body = b"%x\r\n" % (2 << 20) + b" " * (2 << 20)
            self.hostile_status("hostile-chunked", self.raw(head + b"Transfer-Encoding: chunked\r\n\r\n" + body), {411})
        elif pick == 3:
            bomb = zlib.compress(b" " * (20 << 20), 9)
            enc = rng.choice([b"gzip", b"br", b"deflate"])
            self.hostile_status("hostile-compressed", self.raw(head + b"Content-Encoding: " + enc + f"\r\nContent-Length: {len(bomb)}\r\n\r\n".encode() + bomb), {415})
        elif pick == 4:
            flood = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(b"X-Pad-%d: v\r\n" % i for i in range(400)) + b"\r\n"
            self.hostile_status("hostile-header-flood", self.raw(flood), {400, 431})
        elif pick == 5:
            self.hostile_status("hostile-pipelined", self.raw(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 2000), {200})
        elif pick == 6:
            path = "/junk/%d" % rng.randrange(10**9)
            self.hostile_status("hostile-junk-path", self.raw(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()), {404})
        else:
            self.hostile_status("hostile-foreign-host", self.raw(b"GET /v1/models HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n"), {403})

    def hostile_client(self, index, until):
        rng = random.Random(self.args.seed * 7919 + index)
        while time.monotonic() < until:
            self.guarded(f"hostile {index}", lambda: self.hostile(rng))

    def guarded(self, what, act):
        try:
            act()
        except (OSError, http.client.HTTPException) as e:
            self.fail(f"{what}: {type(e).__name__}: {e}")

    def burst(self, rng):
        keys = [("text", rng.randrange(4)) for _ in range(self.args.parallel * 6)]
        threads = [threading.Thread(target=self.guarded, args=("burst", lambda k=k: self.chat(k))) for k in keys]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    # ---- the run ----
    def client(self, index, until):
        rng = random.Random(self.args.seed * 1000 + index)
        actions = [
            (30, lambda: self.chat(("text", rng.randrange(4)))),
            (15, lambda: self.chat(("image", 1))),
            (12, lambda: self.chat(("text", rng.randrange(4)), stream=True)),
            (4, lambda: self.chat(("text", rng.randrange(4)), stream=True, slow=True)),
            (8, lambda: self.dropped_stream(("text", rng.randrange(4)))),
            (6, self.cut_body),
            (6, self.malformed),
            (4, self.oversized),
            (6, lambda: self.cache_miss(rng)),
            (2, lambda: self.burst(rng)),
        ]
        total = sum(w for w, _ in actions)
        while time.monotonic() < until:
            pick = rng.uniform(0, total)
            for w, act in actions:
                pick -= w
                if pick <= 0:
                    self.guarded(f"client {index}", act)
                    break


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckjit", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "ckjit"))
    ap.add_argument("-m", "--model")
    ap.add_argument("--mmproj")
    ap.add_argument("--image", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "vision", "images", "square-64.png"))
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--clients", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hostile", type=int, default=0, help="hostile clients beside the normal ones")
    ap.add_argument("--request-timeout", type=int, default=5, help="the server's --request-timeout")
    args = ap.parse_args()
    args.clients = args.clients or 4 * args.parallel
    tmp = tempfile.mkdtemp(prefix="ckjit_soak_")
    atexit.register(shutil.rmtree, tmp, True)
    if not args.model:
        subprocess.run([args.ckjit, "synth", "-q", "--preset", "tiny", "--seed", "3", "--name", "t", "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        args.model, args.mmproj = os.path.join(tmp, "t-Q4_K_M.gguf"), os.path.join(tmp, "mmproj-t-f16.gguf")
    log_path = os.path.join(tmp, "server.log")
    log = open(log_path, "w")
    cmd = [args.ckjit, "serve", "-m", args.model, "--mmproj", args.mmproj, "--port", "0", "--parallel", str(args.parallel),
           "-t", "1", "--no-profile", "--max-queue", str(2 * args.parallel), "--timeout", "20",
           "--request-timeout", str(args.request_timeout)]
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    atexit.register(lambda: server.poll() is None and server.kill())  # registered after rmtree: runs first
    port = None
    for _ in range(600):
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(log_path).read())
        if m:
            port = int(m.group(1))
            break
        if server.poll() is not None:
            break
        time.sleep(0.1)
    if not port:
        print(open(log_path).read(), file=sys.stderr)
        print("soak: the server did not start", file=sys.stderr)
        return 1
    soak = Soak(args, port, server.pid)
    # The reference: each deterministic request alone, before any load.
    for key in [("text", s) for s in range(4)] + [("image", 1)]:
        status, _, data = soak.post(soak.body(key))
        if status != 200:
            print(f"soak: reference request {key} answered {status}: {data[:300]!r}", file=sys.stderr)
            return 1
        soak.reference[key] = json.loads(data)["choices"][0]["message"]["content"]
    start = time.monotonic()
    until = start + args.seconds
    clients = [threading.Thread(target=soak.client, args=(i, until), daemon=True) for i in range(args.clients)]
    clients += [threading.Thread(target=soak.hostile_client, args=(i, until), daemon=True) for i in range(args.hostile)]
    for t in clients:
        t.start()
    # RSS samples: warm-up is the first fifth of the run.
    samples = []
    while any(t.is_alive() for t in clients) and time.monotonic() < until + 180:
        samples.append((time.monotonic() - start, rss_kib(server.pid)))
        time.sleep(1)
    hung = [t for t in clients if t.is_alive()]
    if hung:
        soak.fail(f"{len(hung)} clients still waiting 180 s after the end (a deadlock?)")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/health")
    health = c.getresponse().status
    if health != 200:
        soak.fail(f"/health answered {health} after the soak")
    warm = [kib for t, kib in samples if t >= args.seconds / 5]
    rss_warm, rss_end = (warm[0], warm[-1]) if warm else (0, 0)
    if rss_warm and rss_end > rss_warm * 1.10 + 16 * 1024:
        soak.fail(f"RSS grew from {rss_warm // 1024} MiB after warm-up to {rss_end // 1024} MiB at the end")
    server.terminate()
    exit_status = server.wait(timeout=60)
    if exit_status != 0:
        soak.fail(f"the server exited {exit_status} on SIGTERM")
    lat = sorted(soak.latencies)
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0.0
    info = subprocess.run([args.ckjit, "info"], capture_output=True, text=True).stdout.splitlines()
    load = os.getloadavg()
    print(f"machine: {info[0] if info else '?'}")
    print(f"soak: {args.seconds:.0f} s, {args.clients} clients, {args.hostile} hostile, --parallel {args.parallel}, --max-queue {2 * args.parallel}, "
          f"seed {args.seed}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for (kind, status), n in sorted(soak.counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print(f"  {kind:22s} {str(status):>14s} {n:6d}")
    print(f"completed chats: {len(lat)}, latency p50 {pct(0.5) * 1000:.0f} ms, p95 {pct(0.95) * 1000:.0f} ms")
    print(f"RSS: {rss_warm // 1024} MiB after warm-up, {rss_end // 1024} MiB at the end")
    if soak.failures:
        print(f"soak: {len(soak.failures)} failures:", file=sys.stderr)
        for f in soak.failures[:20]:
            print("  " + f, file=sys.stderr)
        print(open(log_path).read()[-3000:], file=sys.stderr)
        return 1
    print("soak: every answer as a single client's, no 5xx but 503 with Retry-After, no deadlock, RSS flat")
    return 0


if __name__ == "__main__":
    sys.exit(main())
