#!/usr/bin/env python3
"""Writes the tokenizer test corpus: tests/data/tokenizer/corpus.hex, one
string per line as the hex of its bytes. Deterministic (fixed seed).

Categories: English prose, CJK, Arabic, Hindi, Thai, emoji (ZWJ sequences,
skin tones, flags), source code, numbers of every length, whitespace runs,
special-token strings, control characters, contractions, mixed scripts with
combining marks, and byte strings that are not valid UTF-8.

Excluded on purpose: 4-byte forms that decode above U+10FFFF (F4 90.. and
F5..F7 leads with three continuation bytes). llama.cpp aborts the process
on those (std::invalid_argument in unicode_cpt_to_utf8); nucleus reads the
lead byte as invalid instead, which tests/unit/test_tokenizer.c checks.

usage: python3 scripts/gen_tokenizer_corpus.py [OUT]
       python3 scripts/gen_tokenizer_corpus.py --fuzz-seeds DIR
The second form writes fuzz/corpus/tokenizer seeds: a sample of the corpus,
each with a flag byte in front (see fuzz/fuzz_tokenizer.c).
"""
import random
import sys

SEED = 20261129
rng = random.Random(SEED)

WORDS = ("the of and to in is was that for it with as his on be at by had "
         "are but from or have an they which one you were all we her she "
         "there would their will when who him been has more if no out so "
         "said what up its about than into them can only other new some "
         "could time these two may first then do any like my now over such "
         "our man me even most made after also did many before must through "
         "years where much your way well down should because each just those "
         "people how too little state good very make world still own see men "
         "work long get here between both life being under never day same "
         "another know while last might us great old year off come since "
         "against go came right used take three tokenizer llama nucleus "
         "Hello World GPT OpenAI HTTP JSON naïve café résumé coöperate "
         "façade Zürich Ångström São Paulo déjà-vu").split()

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>",
            "<reponame>", "<file_sep>", "<filename>", "<gh_stars>",
            "<issue_start>", "<jupyter_code>", "<empty_output>", "<bos>",
            "<eos>", "<pad>", "<unk>", "<start_of_turn>", "<end_of_turn>",
            "<mask>", "<start_of_image>", "<s>", "</s>", "[INST]",
            "<|eot_id|>", "<|begin_of_text|>", "<unused0>", "<unused99>",
            "<|im_start", "im_end|>", "<<|im_end|>>", "<|im_end|><|im_end|>"]

CODE = [
    "int main(int argc, char **argv) {\n  return 0;\n}\n",
    "def f(x):\n    return x ** 2  # square\n",
    "for (size_t i = 0; i < n; ++i) { a[i] += b[i] * 3.5f; }",
    "const x = async () => { await fetch('/api?q=1&r=2'); };",
    "SELECT name, COUNT(*) FROM users WHERE id >= 10 GROUP BY name;",
    "#include <stdio.h>\n#define MAX(a,b) ((a)>(b)?(a):(b))\n",
    "if x != nil {\n\treturn fmt.Errorf(\"bad: %w\", err)\n}\n",
    "<div class=\"x\"><p>Hello &amp; welcome</p></div>",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "    \t    indented\n\n\n\t\ttabs\r\n",
    "x=1;y=2;z=x+y*3-4/5%6^7|8&9~0",
    "$ ls -la | grep '^d' >> out.txt 2>&1",
    "{\"key\": [1, 2.5, -3e10, true, null], \"s\": \"a\\nb\"}",
    "lambda: [i for i in range(10) if i % 2 == 0]",
    "@decorator\nclass Foo(Bar, metaclass=Meta):\n    pass\n",
]

CJK = ("日本語のテキスト 東京タワー 漢字とひらがなとカタカナ "
       "中文分词测试，你好世界！我们在北京。"
       "한국어 텍스트 안녕하세요 세계 서울특별시 "
       "繁體中文測試：臺灣、香港。")
ARABIC = ("مرحبا بالعالم هذا نص عربي للاختبار ١٢٣٤٥ "
          "اللغة العربية جميلة، أليس كذلك؟")
HINDI = ("नमस्ते दुनिया यह हिन्दी का परीक्षण है। १२३४५ "
         "भारत की राजधानी नई दिल्ली है")
THAI = "สวัสดีชาวโลก ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ ๑๒๓๔"
OTHER = ("Привет, мир! Ελληνικά κείμενα. עברית טקסט. ქართული ენა. "
         "Հայերեն. ᏣᎳᎩ. ꦗꦮ. 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝 ℌ𝔢𝔩𝔩𝔬 ﬁ ﬂ Ⅻ ½ ² ³ ① ⑳ "
         "e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937 \u1100\u1161\u11a8")

EMOJI = ["😀", "👍", "👍🏻", "👍🏽", "👍🏿", "👨‍👩‍👧‍👦", "👩‍💻", "🧑🏾‍🚀",
         "🏳️‍🌈", "🇺🇸", "🇯🇵", "🇫🇷🇩🇪", "❤️", "✨", "🦙", "🤖", "🫠",
         "👨🏻‍❤️‍💋‍👨🏼", "🙋‍♀️", "🏃🏽‍♂️", "🐕‍🦺", "⌚", "☕", "1️⃣", "#️⃣",
         "🧬", "🪐", "🎉🎊", "🔥🔥🔥", "👋🏼"]

WS = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u3000",
      "\u2028", "\u2009", "\u200b", "\u0085", "\x0b", "\x0c", " \n ", "\t\t"]

CONTROL = [chr(c) for c in range(0, 32)] + ["\x7f", "\u0080", "\u009f",
           "\u200d", "\u200e", "\ufeff", "\ufffd", "\ue000", "\U000f0000"]


def prose(n_words):
    words = [rng.choice(WORDS) for _ in range(n_words)]
    s = " ".join(words)
    s = s[0].upper() + s[1:]
    return s + rng.choice([".", "!", "?", "...", ",", ";", ":", ""])


def pick_chars(text, lo, hi):
    n = rng.randint(lo, hi)
    start = rng.randint(0, max(0, len(text) - n))
    return text[start:start + n]


def number(n_digits):
    s = str(rng.randint(1, 9)) + "".join(
        str(rng.randint(0, 9)) for _ in range(n_digits - 1))
    return s if n_digits > 1 else str(rng.randint(0, 9))


def rand_cp():
    blocks = [(0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x3ff),
              (0x400, 0x4ff), (0x590, 0x6ff), (0x900, 0x97f), (0xe00, 0xe7f),
              (0x1100, 0x11ff), (0x2000, 0x206f), (0x20a0, 0x20cf),
              (0x2100, 0x214f), (0x2190, 0x23ff), (0x2500, 0x27bf),
              (0x3000, 0x30ff), (0x4e00, 0x9fff), (0xac00, 0xd7a3),
              (0xe000, 0xe0ff), (0xfb00, 0xfb4f), (0xfe00, 0xfe6f),
              (0xff00, 0xffef), (0x10000, 0x1007f), (0x1d400, 0x1d7ff),
              (0x1f300, 0x1faff), (0x20000, 0x2a6df), (0xe0000, 0xe007f),
              (0x10fff0, 0x10ffff)]
    lo, hi = rng.choice(blocks)
    return chr(rng.randint(lo, hi))


def llama_aborts(b):
    """True when llama.cpp's decoder would see a code point > U+10FFFF."""
    i = 0
    while i < len(b):
        c = b[i]
        if 0xF0 <= c <= 0xF7 and i + 3 < len(b) + 0 and i + 3 <= len(b) - 1 \
                and all(0x80 <= x <= 0xBF for x in b[i + 1:i + 4]):
            cp = ((c & 7) << 18) | ((b[i + 1] & 0x3F) << 12) | \
                 ((b[i + 2] & 0x3F) << 6) | (b[i + 3] & 0x3F)
            if cp > 0x10FFFF:
                return True
            i += 4
            continue
        i += 1
    return False


def invalid_bytes():
    kind = rng.randrange(8)
    good = prose(rng.randint(1, 6)).encode()
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 24)))
    if kind == 1:  # truncated multi-byte sequences
        full = rng.choice(["日", "é", "🦙", "👍🏽", "ก"]).encode()
        return good + full[:rng.randint(1, len(full) - 1)] + good
    if kind == 2:  # stray continuation bytes
        return good + bytes([rng.randint(0x80, 0xBF)]) * rng.randint(1, 4)
    if kind == 3:  # overlong forms
        return rng.choice([b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\xaf",
                           b"\xf0\x80\x80\xaf", b"\xe0\x9f\xbf"]) + good
    if kind == 4:  # surrogates
        return good + rng.choice([b"\xed\xa0\x80", b"\xed\xbf\xbf",
                                  b"\xed\xa0\xbd\xed\xb8\x80"])
    if kind == 5:  # invalid lead bytes
        return good + bytes([rng.choice([0xF8, 0xFC, 0xFE, 0xFF, 0xC0, 0xF5])]) + good
    if kind == 6:  # interrupted sequence
        return b"\xe6\x97" + good + b"\xf0\x9f\x98" + b" x"
    return good + b"\x00" + good


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tokenizer/corpus.hex"
    items = []
    add = items.append
    # Fixed edge cases first.
    for s in ["", " ", "  ", "\n", " \n", "\n ", "a", "A", "'s", "'S", "'ll",
              "'LL", "'re", "'Ve", "'", "''", "' s", "don't", "DON'T",
              "I'm", "we'Re", "1", "12", "123", "1234", "12345", "123456",
              "1234567", "1,234,567.89", "3.14159", "-42", "0x1F", "1e-9",
              "Hello world", " Hello world", "Hello  world", "Hello\n\nworld",
              "hello   \n\n  world", "    ", "\t\t\t", "\n\n\n\n",
              " \t \n \r\n ", "a  b   c    d", "a\u00a0b", "\u3000\u3000x",
              "x \u2028 y", "ŉ", "İstanbul", "ǅemal", "ß", "ﬃ"]:
        add(s.encode())
    for s in SPECIALS:
        add(s.encode())
    for i in range(1, 41):  # numbers of every length
        add(number(i).encode())
        add((" " + number(i) + " apples").encode())
        add(("v" + number(i) + "x" + number(max(1, i // 2))).encode())
    for w in WS:
        for k in (1, 2, 3, 5, 8):
            add((w * k).encode())
            add(("a" + w * k + "b").encode())
            add((w * k + "word").encode())
    for c in CONTROL:
        add(c.encode())
        add(("x" + c + "y").encode())
    for e in EMOJI:
        add(e.encode())
        add(("I " + e + " this " + e + e).encode())
    for s in CODE:
        add(s.encode())
    # Random strings per category.
    gens = [
        lambda: prose(rng.randint(1, 30)),
        lambda: pick_chars(CJK, 1, 30),
        lambda: pick_chars(ARABIC, 1, 30),
        lambda: pick_chars(HINDI, 1, 30),
        lambda: pick_chars(THAI, 1, 30),
        lambda: pick_chars(OTHER, 1, 30),
        lambda: " ".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 6))),
        lambda: rng.choice(CODE)[rng.randint(0, 10):],
        lambda: " ".join(number(rng.randint(1, 20)) for _ in range(rng.randint(1, 5))),
        lambda: "".join(rng.choice(WS + ["a", "b", "."]) for _ in range(rng.randint(1, 20))),
        lambda: prose(rng.randint(1, 8)) + rng.choice(SPECIALS) + prose(rng.randint(1, 8)),
        lambda: rng.choice(SPECIALS) + rng.choice(WS) + rng.choice(SPECIALS) + "x",
        lambda: "".join(rng.choice(CONTROL) for _ in range(rng.randint(1, 8))),
        lambda: "".join(rand_cp() for _ in range(rng.randint(1, 20))),
        lambda: " ".join([prose(3), pick_chars(CJK, 2, 8), rng.choice(EMOJI),
                          pick_chars(ARABIC, 2, 8), number(rng.randint(1, 9)),
                          pick_chars(HINDI, 2, 8)]),
        lambda: rng.choice(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S",
                            "'T", "'RE", "'Ve", "'M", "'LL", "'D"]).join(
                                prose(2) for _ in range(3)),
        lambda: prose(rng.randint(1, 5)).replace(" ", rng.choice(WS)),
    ]
    while len(items) < 2000:
        if rng.random() < 0.1:
            b = invalid_bytes()
            if not llama_aborts(b):
                add(b)
            continue
        add(rng.choice(gens)().encode())
    for _ in range(150):
        b = invalid_bytes()
        if not llama_aborts(b):
            add(b)
    if out == "--fuzz-seeds":
        import os
        d = sys.argv[2]
        os.makedirs(d, exist_ok=True)
        pick = random.Random(SEED + 1)
        for i, b in enumerate(pick.sample(items, 96)):
            with open(os.path.join(d, f"seed{i:03d}"), "wb") as f:
                f.write(bytes([pick.randrange(16)]) + b)
        print(f"96 seeds -> {d}", file=sys.stderr)
        return
    with open(out, "w") as f:
        for b in items:
            f.write(b.hex() + "\n")
    print(f"{len(items)} strings -> {out}", file=sys.stderr)
    # Long words (over 4096 bytes: the BPE bucket-queue path), next to it.
    lrng = random.Random(SEED + 2)
    longs = [
        "".join(lrng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6000)),
        "".join(lrng.choice("etaoinshrdlu") for _ in range(9000)),
        "aaaaaaaaab" * 600,
        "".join(lrng.choice(WORDS) for _ in range(1500)),
        "".join(lrng.choice(CJK.replace(" ", "")) for _ in range(2000)),
        "x" * 5000 + " " * 5000 + "\n" * 300 + "1234567890" * 500,
    ]
    long_out = out.replace("corpus.hex", "long.hex")
    with open(long_out, "w") as f:
        for t in longs:
            f.write(t.encode().hex() + "\n")
    print(f"{len(longs)} long strings -> {long_out}", file=sys.stderr)


if __name__ == "__main__":
    main()
