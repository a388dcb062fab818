#!/usr/bin/env bash
# The cast-order probe's kernels, from the ninth session's k8/k16/k4.cu
# (fp8gen's colwise kernels at the shipped schedules), written into
# build/ (not committed: run this, then order.cu's build line, from this
# folder): cast_kN_vV differs
# from cast_kN only in which program takes which tile:
#   v0 grid (nm, nk): pm = x, pk = y (fp8gen's order: down the rows of a
#      column block first)
#   v1 grid (nk, nm): pk = x, pm = nm-1-y (along the rows first, from the
#      bottom: the band of rows the amax read last, still in L2, first)
#   v2 grid (nk, nm): pk = x, pm = y (along the rows, from the top: the
#      write pattern of v1 without its L2 reuse)
#   v3 grid (nm, nk): pm = nm-1-x, pk = y
set -euo pipefail
cd "$(dirname "$0")"
src=../../2026-12-02-NVIDIA-H200-session9/probes
mkdir -p build
for k in k8 k16 k4; do
	for v in 0 1 2 3; do
		case $v in
		0) PM='(int)blockIdx.x'; PK='(int)blockIdx.y' ;;
		1) PM='((int)gridDim.y - 1 - (int)blockIdx.y)'; PK='(int)blockIdx.x' ;;
		2) PM='(int)blockIdx.y'; PK='(int)blockIdx.x' ;;
		3) PM='((int)gridDim.x - 1 - (int)blockIdx.x)'; PK='(int)blockIdx.y' ;;
		esac
		awk -v pm="$PM" -v pk="$PK" -v k=$k -v v=$v '
			/^extern "C" const void\*/ { print "extern \"C\" const void* cast_" k "_v" v "_fn = (const void*)cast_" k "_v" v ";"; next }
			/__global__.*cast_/ { incast = 1; sub("cast_" k "\\(", "cast_" k "_v" v "(") }
			/__global__.*amax_/ { incast = 0; sub("amax_" k "\\(", "amax_" k "_v" v "(") }
			incast { gsub(/\(int\)blockIdx\.x/, "PMX"); gsub(/\(int\)blockIdx\.y/, "PKX"); gsub(/PMX/, pm); gsub(/PKX/, pk) }
			{ print }' $src/$k.cu > build/${k}_v$v.cu
	done
done
