# Session 9, call 1: the PDL probe (probes/pdl.cu: where colwise's time
# between kernels goes), then every op's bench, the last commit's binary
# (fp8gen-base, af2a438) against this tree's (memset and the copy on the
# device's stream; the QK kernels' v rows read no tables, the backward no
# qkv), interleaved twice, no peers.
set -u
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p $R
P=bench/results/2026-12-02-NVIDIA-H200-session9/probes
(cd $P && nvcc -O3 -arch=sm_90 -o /tmp/pdl pdl.cu k8.cu k16.cu k4.cu) > $R/probe-build.log 2>&1 && timeout 150 /tmp/pdl > $R/probe.log 2>&1
echo "probe rc=$?" >> $R/probe.log
cp .gpurun9/fp8gen-base .gpurun9/fp8gen /tmp/ 2>/dev/null
BIN=.gpurun9 STAGES=bench DEADLINE=420 BENCH_OPS=colwise_cast,grouped_colwise_cast,expert_colwise_cast,qk_norm_rope,qk_norm_rope_bwd,rowwise_cast,tensorwise_cast bash scripts/gpu.sh $R/ab .gpurun9/fp8gen-base > $R/ab.log 2>&1
tar czf $OUT/r.tgz -C $OUT r
