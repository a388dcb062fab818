#!/bin/bash
# call 6: why the sweep (611 µs) and the bench with peers (620 µs, session
# 15 call 5) differ at grouped 65536x7168x8 with the same kernels: bench
# without peers at 60 and 200 repetitions, without and with the reference
# check before the timing; then the bench with the peers (of record).
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit16
R=$OUT/r; mkdir -p $R
B=$PWD/.gpurun16
S=65536x7168x8
for v in "60 false" "200 false" "200 true" "60 true"; do
  set -- $v
  echo "== iters $1 check $2" >> $R/control.log
  timeout 90 $B/fp8gen bench --ops grouped_colwise_cast --shapes $S --peers off --plot off --iters $1 --check=$2 --out $R/c-$1-$2 >> $R/control.log 2>&1
done
tar czf $OUT/r.tgz -C $OUT r
timeout 330 $B/fp8gen bench --ops grouped_colwise_cast --shapes $S --peers on --out $R/bench > $R/bench.log 2>&1
echo "rc=$?" >> $R/bench.log
tar czf $OUT/r.tgz -C $OUT r
