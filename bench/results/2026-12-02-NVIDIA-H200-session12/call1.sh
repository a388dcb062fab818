# Session 12, call 1: the QK forward's candidates that ask the compiler for
# more blocks an SM (OCCUPANCY, launch bounds) checked bit-exact at every
# schedule and tuned at the three bench shapes (8 of 11 timed); the
# process start of a Go hello-world, of fp8gen and of a tune cache hit.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit11 PYTHONUNBUFFERED=1
B=$PWD/.gpurun12
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
pack() { cp -f /tmp/tune12.json $R/ 2>/dev/null; tar czf $OUT/r.tgz -C $OUT r; }
tar xzf $B/jit.tgz -C /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
times() { for i in $(seq 15); do s=$(date +%s%N); "$@" > /dev/null 2>&1; e=$(date +%s%N); echo $(( (e-s)/1000 )); done | sort -n | tr '\n' ' '; }
cp $B/shipped.json /tmp/hit.json
$B/fp8gen tune rowwise_cast --shape M=8192,K=8192 --target sm_90 --cache /tmp/hit.json > $R/hit.log 2>&1
note "hello us: $(times $B/hello)"
note "fp8gen help us: $(times $B/fp8gen help)"
note "hit us: $(times $B/fp8gen tune rowwise_cast --shape M=8192,K=8192 --target sm_90 --cache /tmp/hit.json)"
GODEBUG=inittrace=1 $B/fp8gen help 2> $R/inittrace.txt > /dev/null
pack
(cd backend && timeout 150 $B/backend.test -test.v -test.run 'GPUEverySchedule/^qk_norm_rope$|GPUOpsMatchReference/qk_norm_rope' > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt)
grep -h -- '^--- \|^    --- FAIL' $R/backend-tests.log | tail -8
pack
export FP8GEN_TUNE_CACHE=/tmp/tune12.json
t0=$(date +%s); timeout 150 $B/fp8gen tune qk_norm_rope --bench --force > $R/tune-qk.log 2>&1; note "tune qk rc=$? $(( $(date +%s) - t0 )) s"
grep -h "^\*\|^  [0-9]" $R/tune-qk.log | cut -c1-200
pack
t0=$(date +%s); timeout 120 $B/fp8gen bench --ops qk_norm_rope --out $R/bench-qk > $R/bench-qk.log 2>&1; note "bench qk rc=$? $(( $(date +%s) - t0 )) s"
grep -h '^| [a-z]' $R/bench-qk/*.md
pack
