# families/decode/local.mk - the decode family (paged-KV decode attention) in kval's one
# Makefile: descriptor, CPU reference and emulation in libkval.a; with CUDA the kernels (one
# instantiation file per storage type), dispatcher, adapter and GPU reference, and the bench
# driver; the unit test, test decks and PyTorch peers.
src_libkval_a_SOURCES += families/decode/decode.h families/decode/decode.c families/decode/decode_limits.h \
	families/decode/decode_cpu_ref.c families/decode/decode_emulate.c
if HAVE_CUDA
src_libkval_a_SOURCES += \
	families/decode/decode_api.h families/decode/decode_kernels.cuh \
	families/decode/inst/decode_fp16.cu families/decode/inst/decode_bf16.cu \
	families/decode/inst/decode_fp16_e4m3.cu families/decode/inst/decode_fp16_e5m2.cu \
	families/decode/inst/decode_bf16_e4m3.cu families/decode/inst/decode_bf16_e5m2.cu \
	families/decode/decode_dispatch.cu families/decode/decode_cuda.cu families/decode/decode_gpu_ref.cu
noinst_PROGRAMS += families/decode/bench/decode_bench
families_decode_bench_decode_bench_SOURCES = families/decode/bench/decode_bench.cu $(KV_BENCH_KIT)
endif
check_PROGRAMS += families/decode/test_decode
families_decode_test_decode_SOURCES = families/decode/test_decode.c $(FAMILY_TEST_KIT)
TESTS += families/decode/test_decode
EXTRA_DIST += families/decode/README.md families/decode/test.deck families/decode/sanitize.deck families/decode/bench/peers.py
