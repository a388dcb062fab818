# Session 10, call 2: a probe (bench/results/2026-12-02-NVIDIA-H200-session10/probes), run from the repository root.
export PATH=/usr/local/cuda/bin:$PATH
cd bench/results/2026-12-02-NVIDIA-H200-session10/probes && S=../../2026-12-02-NVIDIA-H200-session9/probes
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/amax amax.cu $S/k8.cu $S/k16.cu $S/k4.cu && /tmp/amax > $OUT/amax2.log 2>&1
