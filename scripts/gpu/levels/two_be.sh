#!/usr/bin/env bash
# Two best-effort processes at level 3 beside a latency-critical one: both BE contexts run with
# the short yield slice while HP exists, so they switch the GPU between each other at that
# slice. Native vs level 3 at 100 µs (the default) and at 1 µs. Prints each process's JSON.
#
#   BATON_BIN=target/release/baton bash scripts/gpu/levels/two_be.sh
B=${BATON_BIN:-$PWD/target/release/baton}; W=/tmp/tb; mkdir -p $W; export BATON_SOCKET=$W/s.sock
nvcc -O2 -arch=sm_90 -o $W/probe scripts/gpu/levels/preempt_probe.cu
for mode in native l3 l3y1; do
  case $mode in native) P="";; l3) P="$B run --priority 0 --level 3 --";; l3y1) P="env BATON_YIELD_SLICE_US=1 $B run --priority 0 --level 3 --";; esac
  case $mode in native) H="";; *) H="$B run --priority 10 --";; esac
  $P $W/probe be 1000 8 $W/be1_$mode.json & A=$!
  $P $W/probe be 1000 8 $W/be2_$mode.json & C=$!
  sleep 1; $H $W/probe hp 50 10 6 $W/hp_$mode.json; wait $A; wait $C
  echo "== $mode"; cat $W/be1_$mode.json $W/be2_$mode.json $W/hp_$mode.json
done
$B daemon --stop 2>/dev/null
