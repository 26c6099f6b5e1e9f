# quantize: writing quantized model files (src/quantize/, nucleus quantize).
# tests/e2e/test_quantize.py compares whole files with llama.cpp's.
UNIT_TESTS += test_quantize_file
