# Session 12, call 2: the L2-hint probe (probes/l2hint.cu, gen_l2hint.py):
# does the colwise cast find the amax's last band in L2 when the amax
# loads it evict_last and the cast marks what it is done with evict_first?
set -u
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p $R
cd bench/results/2026-12-02-NVIDIA-H200-session12/probes
python3 gen_l2hint.py > $R/gen.log 2>&1
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/l2hint l2hint.cu build/k*_h?.cu > $R/build.log 2>&1; echo "build rc=$?" | tee -a $R/build.log
tail -20 $R/build.log
timeout 400 /tmp/l2hint 2>&1 | tee $R/l2hint.log
tar czf $OUT/r.tgz -C $OUT r
