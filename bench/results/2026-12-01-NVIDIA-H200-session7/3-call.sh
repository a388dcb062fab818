set -u
STAGES="tests sanitize tune bench" BENCH_OPS=grouped_colwise_cast,colwise_cast,expert_colwise_cast CHECKS=200 DEADLINE=560 \
 TESTS='GPU(OpsMatchReference|EverySchedule|GroupedGarbageOffsets|GoldenSchedules|Capabilities|PrepareOn)' \
 SANITIZE_TESTS='GPU(OpsMatchReference|GroupedGarbageOffsets)/^(colwise_cast|grouped_colwise_cast|#00)' bash scripts/gpu.sh $OUT/r
cat $OUT/r/results/log.txt
grep -h "compiled .* in" $OUT/r/results/*.log
cp $OUT/r/results.tgz $OUT/
