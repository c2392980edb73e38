#!/bin/bash
# The hand-over probe (see probe.cu, pmode.c): a 5 us kernel every 2 ms beside a process that
# keeps the GPU busy, whose context asks for one compute preemption mode or another, with the
# 100 us time slice Baton gives a job while it is outranked. Usage: run.sh OUT [modes|long]
#   modes: spin kernels of 10 us-1 ms CTAs, the GEMM flood and training, in each mode
#   long:  CTAs of 1-300 ms, in CTA and CILP mode, and with no room for the probe's CTA
set -u
OUT=${1:?OUT}; SET=${2:-modes}; mkdir -p "$OUT"
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
nvcc -O3 -arch=sm_90 -o /tmp/probe probe.cu || exit 1
gcc -O2 -shared -fPIC -o /tmp/pmode.so pmode.c -ldl -lpthread || exit 1
R=$OUT/results.txt; : > "$R"
hp() { taskset -c 2 /tmp/probe hp 2000 "$1"; }
# pair NAME MODE JOB...: the job with PM_MODE=MODE and a 100 us slice, the probe beside it
pair() {
  local name=$1 mode=$2; shift 2
  local log=$OUT/$name.log; : > "$log"
  PM_LOG=$log PM_MODE=$mode PM_SLICE_US=100 LD_PRELOAD=/tmp/pmode.so taskset -c 4-7 "$@" > "$OUT/$name.job" 2>&1 &
  local pid=$!
  case "$1" in python3) until grep -q ready "$OUT/$name.job" 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.2; done;; *) sleep 1;; esac
  local h; h=$(hp 4)
  wait $pid
  echo "$name mode=$mode | $h | $(grep -h -E '^be|^job|^error' "$OUT/$name.job" | tr '\n' ' ') | $(grep -h -E 'stats|asked|again' "$log" | tr '\n' ' ')" | tee -a "$R"
}
echo "alone | $(hp 3)" | tee -a "$R"
if [ "$SET" = long ]; then
  pair burn1000-2 2 /tmp/probe be 1000 1000 6
  pair burn1000-1 1 /tmp/probe be 1000 1000 6
  pair burn3ms-1 1 /tmp/probe be 3000 3000 6
  pair burn20ms-1 1 /tmp/probe be 20000 20000 6
  pair burn300ms-1 1 /tmp/probe be 300000 300000 5
  pair burn300ms-2 2 /tmp/probe be 300000 300000 5
  SMEM_KB=72 pair burn300ms-full-1 1 /tmp/probe be 300000 300000 5
  SMEM_KB=72 pair burn1000-full-2 2 /tmp/probe be 1000 1000 6
  exit 0
fi
for m in 2 1; do
  pair burn1000-$m $m /tmp/probe be 1000 1000 6
  pair burn50-$m $m /tmp/probe be 50 1000 6
  pair burn10-$m $m /tmp/probe be 10 1000 6
done
pair burn50-0 0 /tmp/probe be 50 1000 6
for m in 2 1; do
  pair G-$m $m python3 job.py G 6
  pair T-$m $m python3 job.py T 6
done
# a job alone in each mode: does the mode cost it anything?
for m in 2 1; do
  for j in G T; do
    echo "alone-$j mode=$m | $(PM_LOG=$OUT/alone-$j-$m.log PM_MODE=$m LD_PRELOAD=/tmp/pmode.so taskset -c 4-7 python3 job.py $j 5 | grep job)" | tee -a "$R"
  done
done
# CTAs of 300 ms under CTA-level preemption beside the probe: does the switch time out?
pair burn300ms-1 1 /tmp/probe be 300000 300000 5
dmesg 2>/dev/null | grep -i -E 'xid|nvrm' | tail -20 > "$OUT/dmesg.txt"
