#!/usr/bin/env python3
"""Regenerates the WordPiece goldens with Hugging Face tokenizers (the
oracle of src/tokenizer/tokenizer_wpm.c) on all-MiniLM-L6-v2's vocabulary
(models/all-MiniLM-L6-v2, scripts/fetch_minilm.sh):

  tests/data/tokenizer/wordpiece.ids           BertNormalizer as the file has it
                                               (lowercase, strip accents)
  tests/data/tokenizer/wordpiece.cased.ids     lowercase off, accents kept
  tests/data/tokenizer/wordpiece.accents.ids   lowercase on, accents kept

One line per input, the ids of encode(text, add_special_tokens=False),
space-separated; the inputs are the strings of tests/data/tokenizer/
corpus.hex, then the first texts of tests/data/embed/texts.jsonl (200 for
wordpiece.ids, 50 for the others: the goldens stay small). A corpus string that
is not valid UTF-8 is read with U+FFFD for each bad sequence (the
normalizer drops them, as nucleus drops what it decodes to U+FFFD); "-"
marks the few whose bytes nucleus' lenient decoder reads as other code
points (overlong forms), which Hugging Face cannot be given.

usage: python3 scripts/gen_wordpiece_golden.py   (pip install tokenizers==0.23.3)
       python3 scripts/gen_wordpiece_golden.py --fuzz-seeds DIR
The second form writes fuzz/corpus/wordpiece seeds: a sample of the inputs
(the corpus' raw bytes included), each with a flag byte in front (see
fuzz/fuzz_wordpiece.c); it needs no tokenizers package.
"""
import json
import pathlib
import random
import sys


ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "tests/data/tokenizer"


def overlong(b):
    """True when b holds a lead byte C0/C1, or E0 80..9F / F0 80..8F
    followed by continuation bytes: forms the lenient decoder reads as a
    code point where Python's decoder sees invalid bytes."""
    for i, c in enumerate(b):
        nxt = b[i + 1] if i + 1 < len(b) else 0
        if c in (0xC0, 0xC1) and 0x80 <= nxt <= 0xBF:
            return True
        if c == 0xE0 and 0x80 <= nxt <= 0x9F:
            return True
        if c == 0xF0 and 0x80 <= nxt <= 0x8F:
            return True
    return False


N_TEXTS = {"": 200, ".cased": 50, ".accents": 50}


def inputs():
    for line in (DATA / "corpus.hex").read_text().splitlines():
        b = bytes.fromhex(line)
        yield None if overlong(b) else b.decode("utf-8", errors="replace")
    for line in (ROOT / "tests/data/embed/texts.jsonl").read_text(encoding="utf-8").splitlines():
        yield json.loads(line)


def fuzz_seeds(out):
    out.mkdir(parents=True, exist_ok=True)
    raw = [bytes.fromhex(x) for x in (DATA / "corpus.hex").read_text().splitlines()]
    texts = [json.loads(x).encode() for x in
             (ROOT / "tests/data/embed/texts.jsonl").read_text(encoding="utf-8").splitlines()]
    pick = random.Random(4444)
    sample = pick.sample(raw, 56) + pick.sample(texts, 8)
    for i, b in enumerate(sample):
        (out / f"seed{i:03d}").write_bytes(bytes([pick.randrange(16)]) + b[:2000])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--fuzz-seeds":
        fuzz_seeds(pathlib.Path(sys.argv[2]))
        return
    from tokenizers import Tokenizer
    from tokenizers.normalizers import BertNormalizer

    tok = Tokenizer.from_file(str(ROOT / "models/all-MiniLM-L6-v2/tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    texts = list(inputs())
    n_corpus = len((DATA / "corpus.hex").read_text().splitlines())
    for suffix, lower, strip in (("", True, None), (".cased", False, False), (".accents", True, False)):
        tok.normalizer = BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                        strip_accents=strip, lowercase=lower)
        lines = []
        for t in texts[:n_corpus + N_TEXTS[suffix]]:
            if t is None:
                lines.append("-")
            else:
                lines.append(" ".join(map(str, tok.encode(t, add_special_tokens=False).ids)))
        (DATA / f"wordpiece{suffix}.ids").write_text("\n".join(lines) + "\n")
        print(f"wordpiece{suffix}.ids: {len(lines)} lines")


if __name__ == "__main__":
    main()
