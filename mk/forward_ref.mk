# forward_ref: the independent reference forward pass (src/forward_ref*.c),
# tested against the fast path and llama.cpp's goldens. Linked from the
# library so that it follows whatever objects the fast path is made of.
UNIT_TESTS += test_forward_ref
test_forward_ref_LIB := 1
