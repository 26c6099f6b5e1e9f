# embed: embedding mode, pooling, the embedder and nucleus_embed
# (src/model/embed.c, pooling.c, model_embed.c; src/api/api_embed.c),
# against llama.cpp's vectors for the random-weight embedding and rerank
# files (tests/data/embed/arch_<kind>.txt, scripts/gen_embed_goldens.py; the
# files, build/arch/<kind>.gguf, are made by `make arch-models`).
UNIT_TESTS += test_embed
# The bert family's fast path against its reference (tests/reference/
# forward_ref_bert.c) on the bert and nomicbert files.
UNIT_TESTS += test_forward_bert
test_forward_bert_REF := 1
EMBED_MODELS := $(patsubst tests/data/embed/arch_%.txt,build/arch/%.gguf,\
                  $(wildcard tests/data/embed/arch_*.txt))
arch-models: $(EMBED_MODELS)
