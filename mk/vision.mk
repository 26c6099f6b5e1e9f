# vision: images, projector files (mmproj) and their encoders (src/vision/,
# src/api/api_image.c, api_vision.c; docs/VISION.md).
UNIT_TESTS += test_mmproj test_mmproj_encode test_engine_images
UNIT_TESTS += test_mmproj_qwen3vl test_engine_qwen_images test_mmproj_qwen2vl
# The random projector paired with build/arch/gemma3.gguf (same seed).
build/arch/gemma3-mmproj.gguf: scripts/make_mmproj_gguf.py scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_mmproj_gguf.py gemma3 $@ --seed 17
arch-models: build/arch/gemma3-mmproj.gguf
# The random Qwen3-VL projector paired with build/arch/qwen3vl.gguf.
build/arch/qwen3vl-mmproj.gguf: scripts/make_mmproj_gguf.py scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_mmproj_gguf.py qwen3vl $@ --seed 17
arch-models: build/arch/qwen3vl-mmproj.gguf
# The random Qwen2-VL and Qwen2.5-VL projectors, both paired with
# build/arch/qwen2vl.gguf (Qwen2.5-VL's language model is qwen2vl too).
build/arch/qwen2vl-mmproj.gguf: scripts/make_mmproj_gguf.py scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_mmproj_gguf.py qwen2vl $@ --seed 17
build/arch/qwen25vl-mmproj.gguf: scripts/make_mmproj_gguf.py scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_mmproj_gguf.py qwen25vl $@ --seed 17
arch-models: build/arch/qwen2vl-mmproj.gguf build/arch/qwen25vl-mmproj.gguf
# make bench-vision: nucleus_mmproj_encode's time on one image
# (bench/vision_encode.c; bench/vision.py runs it).
.PHONY: bench-vision
bench-vision: $(BUILDDIR)/bench/vision_encode
$(BUILDDIR)/bench/vision_encode: bench/vision_encode.c $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@
