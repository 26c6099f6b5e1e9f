# forward_ref: the independent reference forward pass (tests/reference/),
# tested against the fast path and llama.cpp's goldens. Only tests use it:
# it is not in the library. Tests that set NAME_REF := 1 link it, next to
# the library.
REF_OBJS := $(patsubst %.c,$(BUILDDIR)/%.o,$(wildcard tests/reference/*.c))
UNIT_TESTS += test_forward_ref
test_forward_ref_REF := 1

# The llama-family architectures against llama.cpp (tests/unit/
# test_forward_arch.c) on small random-weight files made here (they are not
# committed; the goldens in tests/data/logits/arch_*.txt are).
UNIT_TESTS += test_forward_arch
test_forward_arch_REF := 1
ARCH_MODELS := build/arch/qwen2.gguf build/arch/qwen3.gguf \
               build/arch/phi3.gguf build/arch/qwen3moe.gguf \
               build/arch/mixtral.gguf build/arch/phi3long.gguf \
               build/arch/gemma2.gguf build/arch/gemma3.gguf \
               build/arch/llamayarn.gguf build/arch/qwen2yarn.gguf \
               build/arch/llamalinear.gguf build/arch/gemma3yarn.gguf \
               build/arch/qwen3moek.gguf
build/arch/%.gguf: scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_arch_gguf.py $* $@ --seed 17
.PHONY: arch-models
arch-models: model $(ARCH_MODELS)

# The real Gemma 3 270M (fetched by `make model`) against llama.cpp.
UNIT_TESTS += test_forward_gemma
