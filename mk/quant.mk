# quant: tensor types, dequantization, activation quantization and the dot
# kernels (src/quant*.c, src/kernels/).
UNIT_TESTS += test_quant test_kernels
test_quant_DEPS := quant quant_dequant
test_kernels_DEPS := quant quant_dequant kernels/ref kernels/dispatch
