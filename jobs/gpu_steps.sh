# gpu_steps.sh - sourced by the one-call GPU scripts (jobs/decode_gpu.sh, jobs/gemm_gpu.sh):
# step NAME LIMIT CMD... runs CMD with its output in $OUT/NAME.log under min(LIMIT, the seconds
# left of $DEADLINE since the script started: bash's SECONDS), and appends "NAME RC SECONDS" to
# $OUT/steps.txt (RC 124 and "(no time left)" for a step the deadline leaves out).
step() {
  local name=$1 limit=$2 left=$((DEADLINE - SECONDS)) t0=$SECONDS rc
  shift 2
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    echo "$name 124 0 (no time left)" >> "$OUT/steps.txt"
    return 124
  fi
  timeout -s TERM "$limit" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name $rc $((SECONDS - t0))" >> "$OUT/steps.txt"
  return $rc
}
