# Session 10, call 1: a probe (bench/results/2026-12-02-NVIDIA-H200-session10/probes), run from the repository root.
# amax.cu as first written: each repetition after a 256 MB cudaMemsetAsync
# (the flush of triton's do_bench), events around the kernel alone, median
# of 30 (the committed amax.cu is call 2's: three copies of x in turn, back
# to back, median of 60, and fp8gen's own amax kernels beside).
export PATH=/usr/local/cuda/bin:$PATH
cd bench/results/2026-12-02-NVIDIA-H200-session10/probes && nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/amax amax.cu
/tmp/amax > $OUT/amax.log 2>&1
