# forward_ref: the independent reference forward pass (tests/reference/),
# tested against the fast path and llama.cpp's goldens. Only tests use it:
# it is not in the library. Tests that set NAME_REF := 1 link it, next to
# the library.
REF_OBJS := $(patsubst %.c,$(BUILDDIR)/%.o,$(wildcard tests/reference/*.c))
.SECONDARY: $(REF_OBJS)
# their header dependencies (model.h's structs): rebuilt when those change
-include $(REF_OBJS:.o=.d)
UNIT_TESTS += test_forward_ref
test_forward_ref_REF := 1

# The llama-family architectures against llama.cpp (tests/unit/
# test_forward_arch.c) on small random-weight files made here (they are not
# committed; the goldens in tests/data/logits/arch_*.txt are). One file
# per golden arch_<file>.txt, and qwen3moek (no golden: invariance only).
UNIT_TESTS += test_forward_arch
test_forward_arch_REF := 1
# The qwen VL language models on an image's embedding rows (M-RoPE
# positions, DeepStack) against llama.cpp (tests/data/logits/vl_image_*.txt)
UNIT_TESTS += test_forward_vl
ARCH_GOLDENS := $(filter-out %_fa.txt %_decode.txt,\
                  $(wildcard tests/data/logits/arch_*.txt))
ARCH_MODELS := $(patsubst tests/data/logits/arch_%.txt,build/arch/%.gguf,\
                 $(ARCH_GOLDENS)) build/arch/qwen3moek.gguf
build/arch/%.gguf: scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_arch_gguf.py $* $@ --seed 17
.PHONY: arch-models
arch-models: model $(ARCH_MODELS)

# The MTP head of the qwen35mtp file above against its reference.
UNIT_TESTS += test_forward_mtp
test_forward_mtp_REF := 1

# Gemma 4 (the gemma4 and gemma4moe files above) against llama.cpp, the
# pieces each golden sees, and the reference.
UNIT_TESTS += test_forward_gemma4
test_forward_gemma4_REF := 1

# The real Gemma 3 270M (fetched by `make model`) against llama.cpp.
UNIT_TESTS += test_forward_gemma
