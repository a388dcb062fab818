#!/usr/bin/env bash
# ncu profiles of fp8gen's kernels on the GPU machine, one bench launch each
# (carried binaries as for gpu.sh):
#
#   bash scripts/prof.sh OUTDIR NAME OP SHAPE [NAME OP SHAPE …]
#
# profiles the first launch of each kernel of OP at SHAPE (sizes joined by x,
# in the op's size order) under its default (tuned) schedule, with the clocks
# left as they are (--clock-control none: the bench's conditions), into
# OUTDIR/NAME.ncu-rep, its text OUTDIR/NAME.txt and every metric collected
# in OUTDIR/NAME.raw.csv. SCHEDULE overrides knobs;
# COUNT (default 2, the two kernels of a two-pass schedule; 1 for a
# one-kernel one) is how many kernel launches are profiled.
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd) || exit 1
shift
bin=$(cd "${BIN:-.gpurun}" && pwd) || exit 1
export PATH=/usr/local/cuda/bin:$PATH
sections=(SpeedOfLight MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables LaunchStats Occupancy WarpStateStats SchedulerStats SourceCounters)
flags=()
for s in "${sections[@]}"; do flags+=(--section "$s"); done
while [ $# -ge 3 ]; do
	name=$1 op=$2 shape=$3
	shift 3
	t0=$(date +%s)
	sched=()
	[ -n "${SCHEDULE:-}" ] && sched=(--schedule "$SCHEDULE")
	timeout "${LIMIT:-150}" ncu --clock-control none -k "regex:^${op%%_*}_" -c "${COUNT:-2}" "${flags[@]}" -f -o "$out/$name" \
		"$bin/fp8gen" bench --ops "$op" --shapes "$shape" --peers off --check=false --iters 1 --warm 0 ${sched[@]+"${sched[@]}"} --out "$out/$name.bench" > "$out/$name.run.txt" 2>&1
	rc=$?
	ncu -i "$out/$name.ncu-rep" --print-summary none > "$out/$name.txt" 2>&1
	# Every metric collected (the stall reasons behind WarpStateStats' chart too).
	ncu -i "$out/$name.ncu-rep" --page raw --csv > "$out/$name.raw.csv" 2>&1
	echo "$name: rc=$rc ($(($(date +%s) - t0)) s)" | tee -a "$out/log.txt"
done
