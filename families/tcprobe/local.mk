# families/tcprobe/local.mk - the tcprobe family (tensor-core arithmetic probes) in kval's one
# Makefile: descriptor, sub-tests, hypothesis model, decoders and CPU kernels in libkval.a;
# with CUDA the probe kernels (mma.sync, wgmma), adapter and GPU reference; the family's unit
# test and test decks.
src_libkval_a_SOURCES += families/tcprobe/tcprobe.h families/tcprobe/tcprobe_limits.h families/tcprobe/tcprobe.c \
	families/tcprobe/tcprobe_inputs.c families/tcprobe/tcprobe_unit.c families/tcprobe/tcprobe_decode.c
if HAVE_CUDA
src_libkval_a_SOURCES += families/tcprobe/tcprobe_kernels.cuh families/tcprobe/tcprobe_cuda.cu
endif
check_PROGRAMS += families/tcprobe/test_tcprobe
families_tcprobe_test_tcprobe_SOURCES = families/tcprobe/test_tcprobe.c $(FAMILY_TEST_KIT)
TESTS += families/tcprobe/test_tcprobe
EXTRA_DIST += families/tcprobe/README.md families/tcprobe/test.deck families/tcprobe/sanitize.deck
