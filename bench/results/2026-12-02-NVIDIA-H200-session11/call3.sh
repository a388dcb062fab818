# Session 11, call 3: the QK backward's last shape again (call 2 stopped
# at its 150 s limit while max-autotune compiled there), peers included.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit11 PYTHONUNBUFFERED=1 FP8GEN_TUNE_CACHE=/tmp/none.json
B=$PWD/.gpurun11
R=$OUT/r; mkdir -p $R
[ -f .gpurun11/jit.tgz ] && tar xzf .gpurun11/jit.tgz -C /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
t0=$(date +%s); timeout 280 $B/fp8gen bench --ops qk_norm_rope_bwd --shapes 8x4096x32x8x128 --out $R/bench-qk_norm_rope_bwd > $R/bench-qk_norm_rope_bwd.log 2>&1; echo "bench rc=$? $(( $(date +%s) - t0 )) s" | tee $R/log.txt
grep -h '^| [a-z]' $R/bench-*/*.md
tar czf $OUT/r.tgz -C $OUT r
