# families/fa2bwd/local.mk - the fa2bwd family (FlashAttention-2 backward) in kval's one
# Makefile: descriptor, CPU reference and emulation in libkval.a; with CUDA the kernels (one
# instantiation file per head dim), dispatcher, adapter and GPU reference; the unit test,
# test decks, the PyTorch peers and the device script.
src_libkval_a_SOURCES += families/fa2bwd/fa2bwd.h families/fa2bwd/fa2bwd.c families/fa2bwd/fa2bwd_limits.h \
	families/fa2bwd/fa2bwd_reference.h families/fa2bwd/fa2bwd_cpu_ref.c families/fa2bwd/fa2bwd_emulate.c
if HAVE_CUDA
src_libkval_a_SOURCES += \
	families/fa2bwd/fa2bwd_api.h families/fa2bwd/fa2bwd_mma_traits.h families/fa2bwd/fa2bwd_mma.cuh \
	families/fa2bwd/inst/fa2bwd_mma_d64.cu families/fa2bwd/inst/fa2bwd_mma_d128.cu \
	families/fa2bwd/fa2bwd_wgmma_traits.h families/fa2bwd/fa2bwd_wgmma.cuh families/fa2bwd/fa2bwd_wgmma_fused.cuh \
	families/fa2bwd/inst/fa2bwd_wgmma_d64.cu families/fa2bwd/inst/fa2bwd_wgmma_d128.cu \
	families/fa2bwd/fa2bwd_dispatch.cu families/fa2bwd/fa2bwd_cuda.cu families/fa2bwd/fa2bwd_gpu_ref.cu
endif
check_PROGRAMS += families/fa2bwd/test_fa2bwd
families_fa2bwd_test_fa2bwd_SOURCES = families/fa2bwd/test_fa2bwd.c $(FAMILY_TEST_KIT)
TESTS += families/fa2bwd/test_fa2bwd
EXTRA_DIST += families/fa2bwd/README.md families/fa2bwd/test.deck families/fa2bwd/sanitize.deck \
	families/fa2bwd/bench/peers.py families/fa2bwd/bench/device_check.sh
