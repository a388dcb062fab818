# Session 12, call 6: colwise's KEEP at 1, 2 and 3 eighths (and 2 without
# the prefetch) at the two square-ish bench shapes, by fp8gen run (the
# default tiles otherwise), three rounds.
set -u
export PATH=/usr/local/cuda/bin:$PATH FP8GEN_CACHE=/tmp/jit11
B=$PWD/.gpurun12
R=$OUT/r; mkdir -p $R
tar xzf $B/jit.tgz -C /tmp
for round in 1 2 3; do
for sh in M=8192,K=8192 M=16384,K=4096; do
  for s in KEEP=1 KEEP=2 KEEP=3 KEEP=2,PREFETCH=0 KEEP=8; do
    echo "round $round $sh $s: $($B/fp8gen run colwise_cast --device gpu --shape $sh --schedule $s 2>&1 | grep -i -m1 'µs')" | tee -a $R/keep.log
  done
done
done
tar czf $OUT/r.tgz -C $OUT r
