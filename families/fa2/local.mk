# families/fa2/local.mk - the fa2 family in kval's one Makefile: descriptor, CPU reference and
# emulation in libkval.a; with CUDA the kernels, dispatcher, adapter and GPU reference, and the
# bench driver with its tile ladder; the family's unit test, test decks and PyTorch peers.
src_libkval_a_SOURCES += \
	families/fa2/fa2.h families/fa2/fa2.c families/fa2/fa2_reference.h families/fa2/fa2_limits.h families/fa2/fa2_cpu_ref.c families/fa2/fa2_emulate.c
if HAVE_CUDA
src_libkval_a_SOURCES += \
	families/device/sm80.cuh families/fa2/fa2_api.h families/fa2/fa2_common.cuh \
	families/fa2/fa2_mma_traits.h families/fa2/fa2_mma.cuh \
	families/fa2/fa2_wgmma_traits.h families/fa2/fa2_wgmma.cuh \
	families/fa2/inst/fa2_mma_d32.cu families/fa2/inst/fa2_mma_d64.cu families/fa2/inst/fa2_mma_d96.cu \
	families/fa2/inst/fa2_mma_d128.cu families/fa2/inst/fa2_mma_d256.cu \
	families/fa2/inst/fa2_wgmma_d64.cu families/fa2/inst/fa2_wgmma_d128.cu families/fa2/inst/fa2_wgmma_d256.cu \
	families/fa2/fa2_dispatch.cu families/fa2/fa2_cuda.cu families/fa2/fa2_gpu_ref.cu
noinst_PROGRAMS += families/fa2/bench/fa2_bench
families_fa2_bench_fa2_bench_SOURCES = families/fa2/bench/fa2_bench.cu families/fa2/bench/fa2_ladder.h \
	families/fa2/bench/fa2_ladder_step.cuh families/fa2/bench/fa2_ladder_d64.cu families/fa2/bench/fa2_ladder_d128.cu \
	families/fa2/bench/fa2_wgmma_ladder_step.cuh families/fa2/bench/fa2_wgmma_ladder_d64.cu \
	families/fa2/bench/fa2_wgmma_ladder_d128.cu \
	$(KV_BENCH_KIT)
endif
check_PROGRAMS += families/fa2/test_fa2
families_fa2_test_fa2_SOURCES = families/fa2/test_fa2.c $(FAMILY_TEST_KIT)
TESTS += families/fa2/test_fa2
EXTRA_DIST += families/fa2/README.md families/fa2/test.deck families/fa2/sanitize.deck families/fa2/bench/peers.py
