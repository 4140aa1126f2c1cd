# families/norm/local.mk - the layernorm and rmsnorm families in kval's one Makefile:
# descriptors, CPU references and emulation in libkval.a; with CUDA the kernels (one
# instantiation file per storage type), dispatcher, adapter and GPU reference, and the bench
# driver; the unit test, test decks and PyTorch peers.
src_libkval_a_SOURCES += families/norm/norm.h families/norm/norm.c families/norm/norm_cpu_ref.c \
	families/norm/norm_emulate.c
if HAVE_CUDA
src_libkval_a_SOURCES += \
	families/norm/norm_api.h families/norm/norm_limits.h families/norm/norm_traits.h families/norm/norm_kernels.cuh \
	families/norm/inst/norm_fp16.cu families/norm/inst/norm_bf16.cu families/norm/inst/norm_fp32.cu \
	families/norm/norm_dispatch.cu families/norm/norm_cuda.cu families/norm/norm_gpu_ref.cu
noinst_PROGRAMS += families/norm/bench/norm_bench
families_norm_bench_norm_bench_SOURCES = families/norm/bench/norm_bench.cu $(KV_BENCH_KIT)
endif
check_PROGRAMS += families/norm/test_norm
families_norm_test_norm_SOURCES = families/norm/test_norm.c $(FAMILY_TEST_KIT)
TESTS += families/norm/test_norm
EXTRA_DIST += families/norm/README.md families/norm/test.deck families/norm/sanitize.deck families/norm/bench/peers.py
