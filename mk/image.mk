# image: decoding PNG, JPEG and WebP into RGB8 (src/vision/image*.c over
# libpng, libjpeg-turbo, libwebp), its unit test and fuzzer.
IMAGE_LIBS := -ljpeg -lpng16 -lwebp

# test_image links the fuzz harness too (it replays fuzz/corpus/image,
# whose seeds scripts/gen_image_seeds.py writes).
UNIT_TESTS += test_image
$(BUILDDIR)/tests/test_image: tests/unit/test_image.c fuzz/fuzz_image.c \
    $(BUILDDIR)/libnucleus.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< fuzz/fuzz_image.c \
	  $(BUILDDIR)/libnucleus.a $(LIBS) -lcmocka -o $@

# libFuzzer target: make fuzz-image (clang-14), then e.g.
#   build/fuzz/fuzz_image -max_total_time=300 fuzz/corpus-run/image \
#     fuzz/corpus/image
# (the libraries themselves are Debian's, not instrumented: the fuzzer
# covers our use of them, the limits and the error paths).
FUZZ_IMAGE_SRCS = fuzz/fuzz_image.c $(call src_of,base) \
  $(wildcard src/vision/image*.c)
.PHONY: fuzz-image
fuzz-image: build/fuzz/fuzz_image
build/fuzz/fuzz_image: $(FUZZ_IMAGE_SRCS) $(wildcard src/vision/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) -Wno-unknown-warning-option -O1 -g $(INCLUDES) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(FUZZ_IMAGE_SRCS) $(IMAGE_LIBS) -lm -o $@
