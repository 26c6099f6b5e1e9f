#!/usr/bin/env python3
"""Writes tests/data/embed/texts.jsonl: 1,000 texts of mixed languages and
lengths (one JSON string per line, deterministic), the inputs of the
embedding tests: English, French, German, Spanish, Russian, Greek, Chinese,
Japanese, Korean, Arabic, Hindi, Thai, code, numbers, emoji and mixtures,
from a word to a few hundred words. Each text fits all-MiniLM-L6-v2's
context: at most 510 WordPiece tokens by Hugging Face's tokenizer (the
tokenizers package, models/all-MiniLM-L6-v2 from scripts/fetch_minilm.sh)
plus [CLS] and [SEP].

usage: python3 scripts/gen_embed_texts.py [OUT]
"""
import json
import pathlib
import random
import sys

SEED = 44
N_TEXTS = 1000
MAX_TOKENS = 510
ROOT = pathlib.Path(__file__).resolve().parents[1]

POOLS = {
    "en": "the quick brown fox jumps over lazy dog retrieval augmented generation "
          "embedding vector search engine query document relevance score model "
          "language sentence transformer cosine similarity database index "
          "weather today tomorrow music river mountain city library coffee".split(),
    "fr": "le la les un une des et est dans pour avec sur été très café crème "
          "bibliothèque français élève forêt hôpital naïve déjà vu où même "
          "fenêtre château garçon noël".split(),
    "de": "der die das und ist nicht mit für über Straße Mädchen schön Größe "
          "Bücher Frühstück Zürich Übung Äpfel Öl groß weiß".split(),
    "es": "el la los las y es en por para con niño mañana corazón canción "
          "información España año pingüino árbol acción".split(),
    "ru": "привет мир это тест русский язык книга город вода время человек "
          "работа жизнь день рука слово место".split(),
    "el": "γεια σου κόσμε αυτό είναι ελληνικά κείμενο Αθήνα θάλασσα ήλιος "
          "άνθρωπος λόγος".split(),
    "zh": list("中文分词测试你好世界我们在北京学习机器翻译向量检索语言模型的数据库"),
    "ja": "日本語 の テキスト 東京 タワー 漢字 ひらがな カタカナ こんにちは "
          "ありがとう 検索 埋め込み".split(),
    "ko": "한국어 텍스트 안녕하세요 세계 서울 특별시 검색 문장 임베딩 모델".split(),
    "ar": "مرحبا بالعالم هذا نص عربي للاختبار اللغة العربية جميلة كتاب".split(),
    "hi": "नमस्ते दुनिया यह हिन्दी का परीक्षण है भारत की राजधानी नई दिल्ली".split(),
    "th": "สวัสดี ชาวโลก ภาษาไทย การค้นหา ข้อความ".split(),
    "code": ["def", "f(x):", "return", "x**2", "int", "main()", "{", "}", "for", "i",
             "in", "range(10):", "#include", "<stdio.h>", "SELECT", "*", "FROM",
             "users;", "a[i]", "+=", "b[i];", "->", "==", "!=", "&&", "||"],
    "num": ["0", "1", "42", "3.14159", "2026", "1,000,000", "-7", "1e-9", "½",
            "²", "Ⅻ", "①", "٣", "१२३"],
    "emoji": ["😀", "👍", "👍🏽", "👨‍👩‍👧‍👦", "🦙", "🤖", "🔥", "❤️", "🇯🇵", "✨"],
    "punct": [",", ".", "!", "?", ";", ":", "—", "–", "…", "«", "»", "“", "”",
              "(", ")", "[", "]", "¿", "¡", "、", "。", "・"],
}
NO_SPACE = {"zh", "th"}


def make_text(rng):
    langs = rng.sample(sorted(POOLS), rng.choice([1, 1, 1, 2, 2, 3]))
    r = rng.random()
    n = (rng.randint(1, 8) if r < 0.45 else rng.randint(8, 30) if r < 0.85
         else rng.randint(30, 80) if r < 0.98 else rng.randint(120, 400))
    parts = []
    for _ in range(n):
        lang = rng.choice(langs)
        w = rng.choice(POOLS[lang])
        if parts and lang in NO_SPACE and rng.random() < 0.7:
            parts[-1] += w
        else:
            parts.append(w)
        if rng.random() < 0.08:
            parts.append(rng.choice(POOLS["punct"]))
    text = " ".join(parts)
    if rng.random() < 0.3:
        text = text[:1].upper() + text[1:]
    if rng.random() < 0.1:
        text = text.upper()
    return text


def fit(text, count):
    """The longest word prefix of text within MAX_TOKENS."""
    if count(text) <= MAX_TOKENS:
        return text
    words = text.split(" ")
    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid])) <= MAX_TOKENS:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "tests/data/embed/texts.jsonl")
    tok_path = ROOT / "models/all-MiniLM-L6-v2/tokenizer.json"
    try:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(tok_path))
        tok.no_truncation()
        tok.no_padding()

        def count(t):
            return len(tok.encode(t, add_special_tokens=False).ids)
    except (ImportError, OSError):
        sys.exit(f"need the tokenizers package and {tok_path} (scripts/fetch_minilm.sh)")
    rng = random.Random(SEED)
    texts = [fit(make_text(rng), count) for _ in range(N_TEXTS)]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    print(f"{out}: {len(texts)} texts", file=sys.stderr)


if __name__ == "__main__":
    main()
