export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/fp8gen-jit
B=$PWD/.gpurun2
mkdir -p $OUT/t
t0=$(date +%s)
( timeout 220 $B/backend.test -test.v -test.timeout 30m -test.run 'GPU(OpsMatchReference|EverySchedule|GroupedGarbageOffsets|GoldenSchedules)/^(colwise_cast|grouped_colwise_cast|expert_colwise_cast|#00|BLOCK)' > $OUT/t/backend.log 2>&1; echo "backend rc=$? $(( $(date +%s)-t0 )) s" >> $OUT/t/log ) &
for tool in memcheck racecheck; do
( FP8GEN_GPU_SMALL=1 timeout 220 compute-sanitizer --tool $tool --error-exitcode 9 $B/backend.test -test.timeout 30m -test.run 'GPU(OpsMatchReference|GroupedGarbageOffsets|EverySchedule)/^(grouped_colwise_cast|colwise_cast|expert_colwise_cast|BLOCK)' > $OUT/t/$tool.log 2>&1; echo "$tool rc=$? $(( $(date +%s)-t0 )) s" >> $OUT/t/log ) &
done
wait
BIN=.gpurun2 DEADLINE=300 bash scripts/sweep.sh $OUT/s < .gpurun2/spec4.txt > /dev/null 2>&1
tar czf $OUT/r4.tgz -C $OUT t s
cat $OUT/t/log; grep -h -- "--- FAIL" $OUT/t/*.log | head; grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $OUT/t/*.log; grep -E "^(--- |ok|PASS|FAIL)" $OUT/t/backend.log
cat $OUT/s/sweep.tsv; cat $OUT/s/kernels.tsv; cat $OUT/s/log.txt 2>/dev/null; true
