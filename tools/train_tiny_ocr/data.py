"""Training pages: seeded lines of words, numbers and punctuation rendered with Debian's DejaVu fonts,
with their ground truth. Sizes are multiples of 32 with at least 8 merged patches, so llama.cpp's
preprocessing keeps them as they are (no resize).

Curriculum levels (`level` 0..3): 0 one short line on a 256x32 strip; 1 one line of up to 5 items on
256-384 x 32-64; 2 one or two lines on up to 384x96; 3 up to four lines on up to 448x160. Words come
from the 250 commonest at level 0, 500 at level 1, all 1,000 above.
"""
import glob
import os
import re
from collections import Counter

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
FONT_NAMES = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf",
              "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf"]
PROMPT = "Read the text on this page."
PUNCT = [".", ",", ":", ";", "-", "(", ")", "/", "%", "#", "$"]


def fonts():
    found = [os.path.join(FONT_DIR, n) for n in FONT_NAMES if os.path.exists(os.path.join(FONT_DIR, n))]
    if not found:
        raise SystemExit(f"data: no DejaVu fonts in {FONT_DIR} (tools/setup.sh installs fonts-dejavu-core)")
    return found


def words(n=1000):
    """The n most frequent words (2-10 letters) of the licence texts every Debian system has: a fixed,
    offline word list, ordered by frequency then spelling."""
    c = Counter()
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="ignore") as f:
                c.update(w.lower() for w in re.findall(r"[A-Za-z]+", f.read()) if 2 <= len(w) <= 10)
    out = [w for w, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))][:n]
    if len(out) < 100:
        raise SystemExit("data: too few words in /usr/share/common-licenses")
    return out


class Pages:
    def __init__(self, seed, word_list=None):
        self.rng = np.random.default_rng(seed)
        self.words = word_list or words()
        self.fonts = fonts()
        self._font_cache = {}
        self.n_words = len(self.words)

    def font(self, path, size):
        key = (path, size)
        if key not in self._font_cache:
            self._font_cache[key] = ImageFont.truetype(path, size)
        return self._font_cache[key]

    def item(self):
        r = self.rng.random()
        if r < 0.72:
            w = self.words[int(self.rng.integers(0, min(len(self.words), self.n_words)))]
            k = self.rng.random()
            return w.capitalize() if k < 0.25 else w.upper() if k < 0.3 else w
        if r < 0.92:
            k = self.rng.random()
            if k < 0.5:
                return str(int(self.rng.integers(0, 10 ** int(self.rng.integers(1, 5)))))
            if k < 0.75:
                return f"{int(self.rng.integers(0, 1000))}.{int(self.rng.integers(0, 100)):02d}"
            return f"{int(self.rng.integers(1, 29)):02d}/{int(self.rng.integers(1, 13)):02d}/{int(self.rng.integers(1990, 2030))}"
        return PUNCT[int(self.rng.integers(0, len(PUNCT)))]

    def line(self, max_items):
        items = [self.item() for _ in range(int(self.rng.integers(1, max_items + 1)))]
        while items[0] in PUNCT:  # a line starts with a word or number
            items[0] = self.item()
        text = ""
        for i, it in enumerate(items):
            glue = "" if i == 0 or (it in ".,:;)%" and len(it) == 1) or text.endswith(("(", "$", "#")) else " "
            text += glue + it
        return text

    LEVELS = [(1, 2, [256], [32]), (1, 5, [256, 320, 384], [32, 64]), (2, 5, [320, 384], [64, 96]),
              (4, 6, [384, 448], [96, 128, 160])]
    # The commonest words first: each is seen more often while the model learns to read at all.
    WORDS_AT_LEVEL = [250, 500, 1000, 1000]

    def size(self, level):
        _, _, Ws, Hs = self.LEVELS[level]
        return int(self.rng.choice(Ws)), int(self.rng.choice(Hs))

    def sample(self, level, size=None):
        """(RGB uint8 array [H, W, 3], ground-truth text with lines joined by '\\n')."""
        rng = self.rng
        n_lines, max_items, _, _ = self.LEVELS[level]
        self.n_words = self.WORDS_AT_LEVEL[level]
        W, H = size or self.size(level)
        lines = [self.line(max_items) for _ in range(int(rng.integers(1, n_lines + 1)))]
        path = self.fonts[int(rng.integers(0, len(self.fonts)))]
        # the largest size (up to 24 px) at which every line fits, with a margin
        size = min(24, max(10, int((H - 4) / (1.25 * len(lines)))))
        while size > 10:
            f = self.font(path, size)
            if max(f.getlength(l) for l in lines) <= W - 8:
                break
            size -= 1
        f = self.font(path, size)
        def shorten(l):  # still too long at 10 px: drop its last item (or character)
            while f.getlength(l) > W - 8 and len(l) > 1:
                l = l.rsplit(" ", 1)[0] if " " in l else l[:-1]
            return l
        lines = [shorten(l) for l in lines]
        bg = int(rng.integers(200, 256))
        fg = int(rng.integers(0, 80))
        im = Image.new("RGB", (W, H), (bg, bg, bg))
        d = ImageDraw.Draw(im)
        line_h = int(size * 1.25)
        y = int(rng.integers(0, max(1, H - line_h * len(lines)) + 1))
        for l in lines:
            slack = int(W - 8 - f.getlength(l))
            x = 4 + int(rng.integers(0, max(1, slack // 2) + 1))
            d.text((x, y), l, fill=(fg, fg, fg), font=f)
            y += line_h
        return np.asarray(im, dtype=np.uint8), "\n".join(lines)


def cer(hyp, ref):
    """Character error rate: Levenshtein distance / len(ref)."""
    prev = list(range(len(ref) + 1))
    for i, a in enumerate(hyp, 1):
        cur = [i]
        for j, b in enumerate(ref, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a != b)))
        prev = cur
    return prev[-1] / max(1, len(ref))
