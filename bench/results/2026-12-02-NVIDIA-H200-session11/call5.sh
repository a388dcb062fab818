# Session 11, call 5: every schedule of every op's test space at its odd
# shape on the H200, run twice (the final kernels: the wider candidates of
# call 1 reverted).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit11; tar xzf .gpurun11/jit.tgz -C /tmp; cd backend && timeout 170 ../.gpurun11/backend.test -test.v -test.run 'GPUEverySchedule' > $OUT/every.log 2>&1; echo rc=$?; grep -c -- '--- PASS' $OUT/every.log; grep -- '--- FAIL' $OUT/every.log | head; grep '^--- \|^ok\|^PASS\|^FAIL\|run twice' $OUT/every.log; grep "=== RUN" $OUT/every.log | awk -F/ '{print $2}' | uniq -c
