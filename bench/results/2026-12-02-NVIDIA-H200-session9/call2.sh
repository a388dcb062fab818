# Session 9, call 2: this tree (memset and copy in the device's stream,
# programmatic dependent launch of a plan's later kernels on sm_90, the QK
# backward reading no qkv for v rows): the runtime's GPU tests; the
# backend's for every op with more than one kernel (bit for bit, run
# twice) and the capability kernels, with memcheck and racecheck beside
# them; then the bench of every op, the last commit (fp8gen-base) against
# this tree with and without PDL (FP8GEN_PDL=off), interleaved twice.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit9
B=$PWD/.gpurun9
R=$OUT/r; mkdir -p $R
note() { echo "$*" | tee -a $R/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
multi='^(colwise_cast|grouped_colwise_cast|expert_colwise_cast|tensorwise_cast|qk_norm_rope_bwd)$'
t0=$(date +%s)
(cd runtime && timeout 150 $B/runtime.test -test.v -test.run GPU > $R/runtime-tests.log 2>&1; echo "runtime tests rc=$?" >> $R/log.txt) &
(cd launch && timeout 150 $B/launch.test -test.v -test.run GPU > $R/launch-tests.log 2>&1; echo "launch tests rc=$?" >> $R/log.txt) &
(timeout 280 $B/backend.test -test.v -test.timeout 30m -test.run "GPUOpsMatchReference/$multi|GPUEverySchedule/$multi|GPUGoldenSchedules|GPUGroupedGarbageOffsets|GPUCapabilities|GPUPrepareOn" > $R/backend-tests.log 2>&1; echo "backend tests rc=$?" >> $R/log.txt) &
for tool in memcheck racecheck; do
  (FP8GEN_GPU_SMALL=1 timeout 280 compute-sanitizer --tool $tool --error-exitcode 9 $B/backend.test -test.timeout 30m -test.run "GPUOpsMatchReference/$multi|GPUGroupedGarbageOffsets" > $R/sanitizer-$tool.log 2>&1; echo "sanitizer $tool rc=$?" >> $R/log.txt) &
done
wait
note "checks $(( $(date +%s) - t0 )) s"
grep -h -- '--- FAIL' $R/*.log | head -20
grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' $R/sanitizer-*.log
grep -h 'programmatic dependent launch' $R/runtime-tests.log
ops=colwise_cast,grouped_colwise_cast,expert_colwise_cast,qk_norm_rope_bwd,tensorwise_cast,rowwise_cast
for i in 1 2; do
  for v in base new nopdl; do
    b=$B/fp8gen; [ $v = base ] && b=$B/fp8gen-base
    pdl=on; [ $v = nopdl ] && pdl=off
    FP8GEN_PDL=$pdl timeout 120 $b bench --ops $ops --peers off --check=false --iters 100 --warm 10 --out $R/bench-$v$i > $R/bench-$v$i.log 2>&1
    note "$v$i rc=$? µs: $(grep '^| [a-z]' $R/bench-$v$i/*.md | awk -F'|' '{printf "%s%s ", $3, $4}')"
  done
done
tar czf $OUT/r.tgz -C $OUT r
