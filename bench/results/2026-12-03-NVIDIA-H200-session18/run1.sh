# call 1: the strip probe (one program per group's column strip, no waits)
# beside fp8gen's defaults on the same machine
set -x
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit1
B=.gpurun18
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv > $OUT/gpu.txt
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o /tmp/strip $B/strip.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/strip > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
for op in grouped_colwise_cast expert_colwise_cast; do
  $B/fp8gen bench --ops $op --peers off --check=false --iters 60 --out $OUT/bench_$op > $OUT/bench_$op.txt 2>&1
  tail -12 $OUT/bench_$op.txt
done
$B/fp8gen bench --ops expert_colwise_cast --opt layout=nk --peers off --check=false --iters 60 --out $OUT/bench_nk > $OUT/bench_nk.txt 2>&1
tail -8 $OUT/bench_nk.txt
cd $OUT && tar czf all.tgz *.txt bench_* && ls
