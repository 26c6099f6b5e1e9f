# The engine: request lifecycle, stop strings, scheduler, the batch.
UNIT_TESTS += test_batch test_stop_matcher test_scheduler test_engine \
  test_engine_spec test_spec_chi2 test_prefill_budget
# Multi-turn chats through the prefix cache (the default model and Gemma 3
# 270M from `make model`).
UNIT_TESTS += test_engine_chat
# Sliding-window layers in the paged cache, on the gemma files (build/arch
# from `make arch-models`, and models/ from `make model`).
UNIT_TESTS += test_engine_swa
# A hybrid model's recurrent state (qwen35): invariance, forks, preemption.
UNIT_TESTS += test_engine_recurrent
# Speculative decoding with the model's MTP head (qwen35mtp, build/arch).
UNIT_TESTS += test_engine_mtp
# The thinking block followed in the output (src/engine/reasoning_track.c).
UNIT_TESTS += test_reasoning_track
