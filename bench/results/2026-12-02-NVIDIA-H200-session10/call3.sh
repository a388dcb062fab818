# Session 10, call 3: a probe (bench/results/2026-12-02-NVIDIA-H200-session10/probes), run from the repository root.
export PATH=/usr/local/cuda/bin:$PATH
cd bench/results/2026-12-02-NVIDIA-H200-session10/probes && bash gen_order.sh && S=../../2026-12-02-NVIDIA-H200-session9/probes
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/order order.cu $S/k8.cu $S/k16.cu $S/k4.cu build/k*_v?.cu && /tmp/order 2>&1 | tee $OUT/order.log
