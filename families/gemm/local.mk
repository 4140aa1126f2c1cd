# families/gemm/local.mk - the gemm family in kval's one Makefile: descriptor, CPU reference
# and emulation in libkval.a; with CUDA the wgmma, mma.sync and cuBLASLt variants, dispatcher,
# adapter and GPU reference, and the bench driver with kval-wgmma's configuration ladder; the
# family's unit test and test decks.
src_libkval_a_SOURCES += families/gemm/gemm.h families/gemm/gemm.c families/gemm/gemm_limits.h \
	families/gemm/gemm_cpu_ref.c families/gemm/gemm_emulate.c
if HAVE_CUDA
src_libkval_a_SOURCES += \
	families/gemm/gemm_api.h families/gemm/gemm_traits.h families/gemm/gemm_common.cuh \
	families/gemm/gemm_wgmma.cuh families/gemm/gemm_mma.cuh \
	families/gemm/inst/gemm_wgmma_fp16_fp32.cu families/gemm/inst/gemm_wgmma_bf16_fp32.cu \
	families/gemm/inst/gemm_wgmma_fp16_fp16.cu families/gemm/inst/gemm_wgmma_bf16_bf16.cu \
	families/gemm/inst/gemm_wgmma_e4m3_fp32.cu families/gemm/inst/gemm_wgmma_e5m2_fp32.cu \
	families/gemm/inst/gemm_mma_fp16.cu families/gemm/inst/gemm_mma_bf16.cu \
	families/gemm/gemm_cublas.cu families/gemm/gemm_gpu_ref.cu families/gemm/gemm_dispatch.cu \
	families/gemm/gemm_cuda.cu
noinst_PROGRAMS += families/gemm/bench/gemm_bench
families_gemm_bench_gemm_bench_SOURCES = families/gemm/bench/gemm_bench.cu families/gemm/bench/gemm_ladder.h \
	families/gemm/bench/gemm_ladder.cu $(KV_BENCH_KIT)
endif
check_PROGRAMS += families/gemm/test_gemm
families_gemm_test_gemm_SOURCES = families/gemm/test_gemm.c $(FAMILY_TEST_KIT)
TESTS += families/gemm/test_gemm
EXTRA_DIST += families/gemm/README.md families/gemm/test.deck families/gemm/sanitize.deck
