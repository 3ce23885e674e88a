#!/usr/bin/env python3
"""A prompt of N words for the speed scripts (perf/compare, ab_run.sh, speed_vs_llama.sh,
envelope.sh): common one-token English words in a fixed order, so every runtime tokenizes it to the
same ~N tokens (random ids rendered to text would re-tokenize differently)."""
import sys

WORDS = "the of and to in is was for on that with as by at from his her an were are which this be or has had".split()


def prompt(n):
    return " ".join(WORDS[(i * 7 + i // 3) % len(WORDS)] for i in range(n))


if __name__ == "__main__":
    print(prompt(int(sys.argv[1])))
