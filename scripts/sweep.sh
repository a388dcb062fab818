#!/usr/bin/env bash
# Times schedules outside an op's candidate list on the GPU machine
# (carried binaries as for gpu.sh):
#
#   bash scripts/sweep.sh OUTDIR < SPEC
#
# SPEC has a line per point, "OP SHAPE SCHEDULE [ncu]" (SHAPE as bench's
# --shapes, SCHEDULE as --schedule). Each point is timed by fp8gen bench
# (the L2 flushed between launches, the median of ITERS, default 50; no
# peers, no reference check: the tests check) into OUTDIR/sweep.tsv (op,
# shape, the whole schedule that ran, µs, the copy's µs). On a line that ends in ncu (or on
# every line with NCU=1) ncu also reads each kernel's duration of one
# launch into OUTDIR/kernels.tsv, to say which kernel of a chain a knob
# moved. DEADLINE (seconds, default 500) stops the sweep between points.
# OUTDIR/gpu.txt names the GPU (nvidia-smi's name, uuid and bus).
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd) || exit 1
bin=$(cd "${BIN:-.gpurun}" && pwd) || exit 1
export PATH=/usr/local/cuda/bin:$PATH
export FP8GEN_CACHE=${FP8GEN_CACHE:-/tmp/fp8gen-jit}
# which GPU timed the sweep: two H200s have timed the same binary 1.4% apart
nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version --format=csv >> "$out/gpu.txt" 2>&1
start=$(date +%s)
n=0
while read -r op shape sched flag; do
	[ -z "$op" ] || [ "${op:0:1}" = "#" ] && continue
	if [ $(($(date +%s) - start)) -gt "${DEADLINE:-500}" ]; then
		echo "stopped at the deadline before $op $shape $sched" | tee -a "$out/log.txt"
		break
	fi
	n=$((n + 1))
	log=$out/$n.log
	"$bin/fp8gen" bench --ops "$op" --shapes "$shape" --schedule "$sched" --peers off --check=false \
		--iters "${ITERS:-50}" --warm 5 --out "$out/$n" > "$log" 2>&1 < /dev/null
	us=$(grep -oP 'fp8gen \K[0-9.]+(?= µs)' "$log" | head -1)
	copy=$(grep -oP 'of copy \(\K[0-9.]+(?= µs)' "$log" | head -1)
	# The schedule that ran: SCHEDULE's knobs over the binary's default.
	ran=$(grep -ohP '"schedule": "[a-z_0-9]+\(\K[A-Z_0-9=,]+' "$out/$n"/*.json 2>/dev/null | head -1)
	sched=${ran:-$sched}
	printf '%s\t%s\t%s\t%s\t%s\n' "$op" "$shape" "$sched" "${us:-error}" "${copy:-}" | tee -a "$out/sweep.tsv"
	if [ "${NCU:-0}" = 1 ] || [ "${flag:-}" = ncu ]; then
		ncu --clock-control none --metrics gpu__time_duration.sum -k "regex:^${op%%_*}_" -c "${COUNT:-2}" --csv \
			"$bin/fp8gen" bench --ops "$op" --shapes "$shape" --schedule "$sched" --peers off --check=false \
			--iters 1 --warm 0 --out "$out/$n.ncu" > "$out/$n.ncu.csv" 2>&1 < /dev/null
		awk -F'","' -v p="$op	$shape	$sched" '/gpu__time_duration.sum/ {sub(/"$/, "", $NF); print p "\t" $5 "\t" $NF " " $(NF-1)}' "$out/$n.ncu.csv" | tee -a "$out/kernels.tsv"
	fi
done
