# The engine: request lifecycle, stop strings, scheduler, the batch.
UNIT_TESTS += test_batch test_stop_matcher test_scheduler test_engine \
  test_engine_spec test_spec_chi2
# Sliding-window layers in the paged cache, on the gemma files (build/arch
# from `make arch-models`, and models/ from `make model`).
UNIT_TESTS += test_engine_swa
