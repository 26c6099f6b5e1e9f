# vision: images, projector files (mmproj) and their encoders (src/vision/,
# src/api/api_image.c, api_vision.c; docs/VISION.md).
UNIT_TESTS += test_mmproj test_mmproj_encode test_engine_images
UNIT_TESTS += test_mmproj_qwen3vl test_engine_qwen_images test_mmproj_qwen2vl
UNIT_TESTS += test_mmproj_gemma4v test_engine_gemma4v_images test_mmproj_job
UNIT_TESTS += test_vit_attention test_mmproj_batch test_engine_image_batch
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
# test_mmproj_fuzz links the projector fuzz harness (it replays
# fuzz/corpus/mmproj, whose seeds scripts/gen_mmproj_seeds.py writes).
UNIT_TESTS += test_mmproj_fuzz
$(BUILDDIR)/tests/test_mmproj_fuzz: tests/unit/test_mmproj_fuzz.c \
    fuzz/fuzz_mmproj.c $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< fuzz/fuzz_mmproj.c \
	  $(BUILDDIR)/libnucleus.a $(LIBS) -lcmocka -o $@
# libFuzzer target: make fuzz-mmproj (clang-14), then e.g.
#   build/fuzz/fuzz_mmproj -max_total_time=600 -timeout=10 \
#     -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=65536 \
#     fuzz/corpus-run/mmproj fuzz/corpus/mmproj
# It encodes with the plain-C kernel table: the kernels' C sources but
# their SIMD files (which need their per-file flags; libFuzzer's build
# compiles every source with one command line).
FUZZ_MMPROJ_KERNELS := $(filter-out %dispatch.c %avx2.c %avx512.c %_avx2.c %_avx512.c \
  $(wildcard src/kernels/avx*.c src/kernels/amx*.c),$(call src_of,kernels))
FUZZ_MMPROJ_SRCS = fuzz/fuzz_mmproj.c $(call src_of,base gguf) \
  $(FUZZ_MMPROJ_KERNELS) $(filter-out %mmproj_open.c,$(wildcard src/vision/*.c))
.PHONY: fuzz-mmproj
fuzz-mmproj: build/fuzz/fuzz_mmproj
build/fuzz/fuzz_mmproj: $(FUZZ_MMPROJ_SRCS) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_MMPROJ_SRCS) $(IMAGE_LIBS) -lpthread -lm -o $@
# The same Gemma 3 projector with its matrices in Q8_0 (test_mmproj_encode).
build/arch/gemma3-mmproj-q8.gguf: scripts/make_mmproj_gguf.py scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_mmproj_gguf.py gemma3 $@ --seed 17 --q8
arch-models: build/arch/gemma3-mmproj-q8.gguf
# The random Gemma 4 projector paired with build/arch/gemma4.gguf.
build/arch/gemma4v-mmproj.gguf: scripts/make_mmproj_gguf.py scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_mmproj_gguf.py gemma4v $@ --seed 17
arch-models: build/arch/gemma4v-mmproj.gguf
# The same Qwen3-VL projector with its matrices in F16, as the real files
# ship them (test_mmproj_batch: the F16 products over several images).
build/arch/qwen3vl-mmproj-f16.gguf: scripts/make_mmproj_gguf.py scripts/make_arch_gguf.py
	@mkdir -p $(dir $@)
	python3 scripts/make_mmproj_gguf.py qwen3vl $@ --seed 17 --f16
arch-models: build/arch/qwen3vl-mmproj-f16.gguf
