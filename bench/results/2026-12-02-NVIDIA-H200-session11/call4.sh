# Session 11, call 4 (on the still-warm machine of call 3): every op against
# its plain-Go reference on the H200 (call 1's run of it stopped at its
# 100 s limit in the QK forward).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_REQUIRE_GPU=1 FP8GEN_CACHE=/tmp/jit11; [ -d /tmp/jit11 ] || tar xzf .gpurun11/jit.tgz -C /tmp; cd backend && timeout 250 ../.gpurun11/backend.test -test.v -test.run 'GPUOpsMatchReference' > $OUT/ops-ref.log 2>&1; echo rc=$?; grep -c -- '--- PASS' $OUT/ops-ref.log; grep -- '--- FAIL' $OUT/ops-ref.log | head; grep '^--- \|^ok\|^PASS\|^FAIL' $OUT/ops-ref.log; grep "=== RUN" $OUT/ops-ref.log | awk -F/ '{print $2}' | uniq -c
