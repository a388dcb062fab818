#!/bin/bash
# call 9: items located by walking forward in 32-bit (no binary search, no
# 64-bit division), in both pipelines.
export PATH=/usr/local/cuda/bin:$PATH
D=bench/results/2026-12-03-NVIDIA-H200-session16
R=$OUT/r; mkdir -p $R
( cd $D/probes && nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/l2pipe l2pipe.cu ) > $R/probe_build.txt 2>&1
timeout 200 /tmp/l2pipe > $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
tar czf $OUT/r.tgz -C $OUT r
