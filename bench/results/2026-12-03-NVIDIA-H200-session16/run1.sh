#!/bin/bash
# call 1: the L2-reread pipeline probe (probes/l2pipe.cu), every bench shape.
export PATH=/usr/local/cuda/bin:$PATH
D=bench/results/2026-12-03-NVIDIA-H200-session16
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
( cd $D/probes && nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/l2pipe l2pipe.cu ) > $R/probe_build.txt 2>&1
pack
timeout 400 /tmp/l2pipe > $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
pack
