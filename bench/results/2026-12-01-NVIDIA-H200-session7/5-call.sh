set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun5
(cd cmd/fp8gen && timeout 100 $B/cmd_fp8gen.test -test.v -test.run GPU > $R/cmd-tests.log 2>&1; echo "cmd-tests rc=$?" >> $R/log.txt)
export FP8GEN_CACHE=/tmp/jit5
op=grouped_colwise_cast
t0=$(date +%s%N); timeout 100 $B/fp8gen tune $op --shape T=32768,K=2048,E=16 --cache $R/tune.json > $R/tune-cold.log 2>&1
echo "tune $op T=32768 rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (one shape, empty JIT cache)" >> $R/log.txt
t0=$(date +%s%N); $B/fp8gen tune $op --bench --cache $R/tune.json > $R/tune-hit.log 2>&1
echo "tune $op --bench rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (first shape a cache hit, two timed)" >> $R/log.txt
t0=$(date +%s%N); $B/fp8gen tune $op --bench --cache $R/tune.json > $R/tune-hit2.log 2>&1
echo "tune $op --bench rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms (three cache hits)" >> $R/log.txt
cat $R/log.txt; grep -h "cached\|compiled" $R/tune-*.log; grep -E "^(--- |ok|PASS|FAIL)" $R/cmd-tests.log
tar czf $OUT/r.tgz -C $OUT r
