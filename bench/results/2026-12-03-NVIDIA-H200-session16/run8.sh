#!/bin/bash
# call 8: what the per-item synchronization costs the register pipeline:
# the same runs with no count and no wait (nosync 1), and also without the
# amax atomics and the scale reads (nosync 2): timing only.
export PATH=/usr/local/cuda/bin:$PATH
D=bench/results/2026-12-03-NVIDIA-H200-session16
R=$OUT/r; mkdir -p $R
( cd $D/probes && nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/l2pipe l2pipe.cu ) > $R/probe_build.txt 2>&1
timeout 200 /tmp/l2pipe call8 > $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
tar czf $OUT/r.tgz -C $OUT r
