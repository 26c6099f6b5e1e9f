# The engine: request lifecycle, stop strings, scheduler, the batch.
UNIT_TESTS += test_batch
test_batch_DEPS := base/status model/batch
UNIT_TESTS += test_stop_matcher
test_stop_matcher_DEPS := base/status engine/stop_matcher
UNIT_TESTS += test_scheduler
test_scheduler_DEPS := engine/scheduler
UNIT_TESTS += test_engine
test_engine_LIB := 1
# Sliding-window layers in the paged cache, on the gemma files (build/arch
# from `make arch-models`, and models/ from `make model`).
UNIT_TESTS += test_engine_swa
test_engine_swa_LIB := 1
