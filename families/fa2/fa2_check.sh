#!/bin/sh
# fa2_check.sh - the FlashAttention-2 driver's validation on the GPU: every head dim and
# precision, causal and not, tails, cross-attention and fully masked rows, against the GPU
# fp64 reference with NaN-poisoned outputs and guard bands. Skips (77) without a GPU.
set -u
: "${top_builddir:?}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIP: no GPU"; exit 77
fi
exec "$top_builddir/families/fa2/bench/fa2_bench" check
