# The engine: request lifecycle, stop strings, scheduler.
UNIT_TESTS += test_stop_matcher
test_stop_matcher_DEPS := status stop_matcher
UNIT_TESTS += test_scheduler
test_scheduler_DEPS := scheduler
UNIT_TESTS += test_engine
test_engine_LIB := 1
