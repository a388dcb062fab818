# Session 8, call 2: the persistent loops of rowwise (PER_CU, PREFETCH;
# registers now held at the estimate × RegFit) and of the QK forward —
# GPU tests, memcheck and racecheck, ptxas's registers, then sweeps.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit8
B=$PWD/.gpurun8
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/gpu.txt 2>&1
run='GPU(OpsMatchReference|EverySchedule|GoldenSchedules)/^(rowwise_cast|qk_norm_rope)$'
t0=$(date +%s)
timeout 200 $B/backend.test -test.v -test.run "$run" > $R/backend-tests.log 2>&1; echo "backend tests rc=$? $(( $(date +%s) - t0 )) s" >> $R/log.txt &
for tool in memcheck racecheck; do
  FP8GEN_GPU_SMALL=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $B/backend.test -test.run 'GPU(GoldenSchedules|EverySchedule)/^(rowwise_cast|qk_norm_rope)$' > $R/$tool.log 2>&1; echo "$tool rc=$?" >> $R/log.txt &
done
(cd golden && timeout 200 $B/golden.test -test.v -test.run NVCCRegisters > $R/nvcc-registers.log 2>&1; echo "nvcc registers rc=$?" >> $R/log.txt) &
wait
grep -E -- '--- FAIL|ERROR SUMMARY|RACECHECK SUMMARY' $R/*.log | head
grep -E "rowwise|qk_norm_rope_[0-9a-f]{8} " $R/nvcc-registers.log | grep -E "PER_CU=[1-9]|PREFETCH=1" | head
BIN=$B DEADLINE=200 bash scripts/sweep.sh $R/sweep-rowwise < scripts/session8/sweep2.txt > $R/sweep-rowwise.log 2>&1
BIN=$B DEADLINE=130 bash scripts/sweep.sh $R/sweep-qk < scripts/session8/sweep2-qk.txt > $R/sweep-qk.log 2>&1
cat $R/log.txt
cut -f2- $R/sweep-rowwise/sweep.tsv $R/sweep-qk/sweep.tsv
rm -rf $R/sweep-*/[0-9]*
tar czf $OUT/r.tgz -C $OUT r
