#!/bin/bash
# scratch: device call C of this session (not committed)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 PYTHONPATH=$PWD/analysis PYTHONUNBUFFERED=1
T=$OUT/table.txt; S=$(date +%s)
tab() { echo "$*" >> "$T"; }
el() { echo $(( $(date +%s) - S )); }
t0=$(date +%s)
DECK=inputs/fleet.deck OUTDIR=$OUT/local timeout 240 bash jobs/local.sh > $OUT/local.log 2>&1; rc=$?
tab "local.sh DECK=fleet.deck on a fresh tree: exit $rc in $(( $(date +%s)-t0 )) s: $(grep -h 'install-deps' $OUT/local.log | tail -1); $(grep -h 'passed,' $OUT/local.log | tail -1 | cut -c1-120)"
grep -h "rank 0 time" $OUT/local.log >> $T; rm -f $OUT/local/*.h5
t0=$(date +%s); (cd build && make -j16 tests/gpu/test_families_gpu > $OUT/tfg_build.log 2>&1)
(cd build && KVAL_SKIP_CEILINGS=1 top_srcdir=$PWD/.. timeout 100 stdbuf -oL tests/gpu/test_families_gpu > $OUT/tfg.log 2>&1); rc=$?
tab "test_families_gpu (all families): exit $rc in $(( $(date +%s)-t0 )) s; $(grep -c FAIL $OUT/tfg.log) FAIL lines; last: $(tail -n 1 $OUT/tfg.log | cut -c1-100)"
grep -E "^(==|TEST|#)" $OUT/tfg.log | head -20 >> $T
KVAL_BUILD=$PWD/build DEADLINE=120 OUT=$OUT/decode bash jobs/decode_gpu.sh > $OUT/decode.log 2>&1
sed -n '/== decode on the GPU/,$p' $OUT/decode.log >> $T
OUT=$OUT/prec timeout 100 bash jobs/precision_gpu.sh > $OUT/prec.log 2>&1; rc=$?
tab "precision_gpu.sh exit $rc:"; tail -n 12 $OUT/prec.log >> $T
PROBES
for i in 1 2; do t0=$(date +%s); timeout 100 mpirun -np 1 build/src/kval inputs/fleet.deck -o $OUT/f$i.h5 > $OUT/f$i.log 2>&1; rc=$?; tab "fleet.deck run $i: exit $rc in $(( $(date +%s)-t0 )) s $(grep -h 'passed,' $OUT/f$i.log | cut -c1-90)"; grep -h "rank 0 time" $OUT/f$i.log >> $T; [ $rc = 0 ] && rm -f $OUT/f$i.h5; [ $(el) -gt 520 ] && break; done
tab "total $(el) s"
cat $T
