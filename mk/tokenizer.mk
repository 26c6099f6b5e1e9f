# tokenizer: vocab loading, pre-tokenizers, BPE/SPM, detokenizer (src/vocab.c,
# src/tokenizer*.c, src/unicode*.c, src/detokenizer.c), its fuzzer.
TOKENIZER_OBJS := unicode unicode_tables unicode_stream vocab tokenizer \
  tokenizer_strtab tokenizer_split tokenizer_bpe tokenizer_spm detokenizer
TOKENIZER_GGUF_OBJS := status mapped_file gguf_index gguf gguf_get quant

UNIT_TESTS += test_tokenizer_golden
test_tokenizer_DEPS := $(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS)
test_tokenizer_golden_DEPS := $(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS)
test_detokenizer_DEPS := $(TOKENIZER_OBJS) $(TOKENIZER_GGUF_OBJS)
