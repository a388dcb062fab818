#!/usr/bin/env python3
"""Time the PyTorch peers of fp8gen's kernels on the GPU.

For each job (an op at one shape with one set of option values) this times

  copy      dst.copy_(src) of a uint8 buffer moving the job's ideal bytes
            (read + written): the memory-bandwidth ceiling for the job,
  eager     the plain chain of PyTorch ops a user writes (f32 maths),
  compiled  torch.compile of it, mode "default",
  autotune  torch.compile of it, mode "max-autotune-no-cudagraphs",

and writes a JSON list of rows in the form of fp8gen's Go package bench.

Usage
-----
  python3 bench/peers.py --jobs JOBS.json --out OUT.json
      [--compile-modes default,max-autotune-no-cudagraphs] [--rep-ms 200] [--check]

JOBS.json is a JSON list of jobs, each

  {"op": "rowwise_cast", "shape": "8192x8192", "sizes": {"M": 8192, "K": 8192},
   "options": {"fp8": "e4m3", "in": "bf16", "pow2": "false"},
   "fp8": "e4m3fn", "ideal_bytes": 201359360}

  op           one of the ops below
  shape        an opaque label, copied into every row of the job
  sizes        the op's named sizes, every one of them, each an int >= 1
  options      the op's option values as strings (fp8gen gives them all,
               defaults filled in); a missing one takes its default
  fp8          the torch FP8 format of the op's FP8 family on the target
               (e4m3fn, e5m2; e4m3fnuz, e5m2fnuz on the MI300X), or null for
               the ops without FP8. The flavour (fnuz or not) is taken from
               it, the family from the fp8 option, so the target's e4m3 name
               serves for an e5m2 job too. Rows carry the format used.
  ideal_bytes  the bytes the op ideally moves (inputs read once, outputs
               written once; for the backward ops those of the training
               step, its forward's and its own), computed by fp8gen: used
               as given, never recomputed here (a mismatch with this
               script's own count is only logged)

Every job is checked before the GPU is touched. A malformed file or job
(wrong JSON types, a size or ideal_bytes < 1, an FP8 op without fp8, HQ not
a multiple of HKV, an odd D, an MX size not a multiple of 32, MX on an fnuz
format) exits with status 2 and a message naming the job, and nothing is
timed. A well-formed job naming what this script does
not know (an op, size, option, option value or FP8 format: fp8gen moved on)
gets error rows saying so, and the run goes on.

The old form still works for the three casts, with default options:

  python3 bench/peers.py --ops rowwise_cast,tensorwise_cast,colwise_cast \\
      --shapes 8192x8192,16384x8192 --fp8 e4m3fn --out peers.json [--check]

Rows
----
OUT.json is rewritten (atomically) after every row, so a crash keeps what
was measured. Each row holds op, shape, impl (copy, eager, compiled or
autotune), time_us (median of one call, null on failure), bytes (the job's
ideal bytes; for copy rows the bytes copied, read and written counted both),
gb_per_s (bytes / time), pct_copy (gb_per_s as a percentage of the job's copy
row), gpu, date, torch, fp8 and options; compiled and autotune rows also
compile_mode; a failed measurement has error (the run goes on); with --check
the compiled and autotune rows have check (their outputs against eager's,
bit for bit); a row may have a note.

Method
------
Inputs are deterministic seeded random data (the seed from the job's op,
label, sizes and options), made once per job, with enough copies of the
whole input set that cycling through them moves more than twice the L2 (as
the device reports it, else 50 MiB) between repetitions, so no repetition is
served from L2. Each measurement is the median of calls over --rep-ms
milliseconds, timed with triton.testing.do_bench where triton imports, else
with CUDA events. Every compile is fresh (torch._dynamo.reset(),
dynamic=False: specialised to the shape, as fp8gen's kernels are). Each
peer, eager or compiled, is run once and its outputs' shapes and dtypes
checked against the op's before it is timed (a mismatch is an error row).

The peers
---------
The casts (options in = bf16|f32, fp8 = e4m3|e5m2, pow2 = false|true):

  scale     = fp8_max / max(amax, 1e-12)      (pow2: 2^floor(log2(scale)))
  q         = fp8(clamp(x * scale, -fp8_max, fp8_max))
  inv_scale = 1 / scale

  rowwise_cast         x[M,K] -> q[M,K], inv_scale[M]: amax per row.
  tensorwise_cast      x[M,K] -> q[M,K], inv_scale[] (0-d): one amax.
  colwise_cast         x[M,K] -> qt[K,M] (cast, then .t().contiguous()),
                       inv_scale[K]: amax per column.
  expert_colwise_cast  w[E,K,N] -> q[E,K,N] (layout=kn) or qt[E,N,K]
                       (layout=nk: .transpose(1, 2).contiguous()),
                       inv_scale[E,N]: amax over K per expert and column.
  tensorwise_cast_transpose
                       x[M,K] -> q[M,K], qt[K,M] (the transposed x cast:
                       .t() then .contiguous()), inv_scale[] (0-d).
  rowcol_cast          x[M,K] -> q[M,K], inv_scale_row[M] as rowwise_cast,
                       qt[K,M], inv_scale_col[K] as colwise_cast.
  grouped_rowcol_cast  x[T,K], offsets[E] -> q[T,K], inv_scale_row[T] as
                       rowwise_cast, qt[K,T], inv_scale_col[E,K] as
                       grouped_colwise_cast (eager and compiled as below).
  grouped_colwise_cast x[T,K], offsets[E] (int32 cumulative group ends, on
                       the device) -> qt[K,T], inv_scale[E,K]: amax per token
                       group and column. Random group sizes summing to T, one
                       group empty where E >= 3. eager is what users write
                       today: offsets.tolist() (a host sync every call) and a
                       loop over the groups. That loop cannot be compiled
                       without graph breaks, so compiled and autotune time a
                       device-only formulation instead: each row's group by
                       torch.searchsorted, the amaxes by scatter_reduce(amax).

QK-norm + RoPE (options order = bshd|sbhd, rope = neox|gptj, weight =
bf16|f32, eps = 1e-6|1e-5, angles = table|theta):

  qk_norm_rope         qkv[B,S,(HQ+2*HKV)*D] bf16 ([S,B,...] with sbhd),
                       q_weight, k_weight[D] (weight type), and cos, sin[S,D]
                       f32 (angles=table) or inv_freq[D/2] f32 (angles=theta:
                       the peer makes cos and sin of position * inv_freq, as
                       rotary embeddings do in each forward) ->
                       q[B,S,HQ,D], k, v[B,S,HKV,D] bf16 contiguous. qkv is
                       split as Megatron packs it (viewed [..., HKV, G+2, D]:
                       per KV group G = HQ/HKV query heads, then k, then v),
                       q and k RMS-normalised in f32 (t * rsqrt(mean(t^2) +
                       eps) * w), rounded to bf16 and back with
                       round_norm=true, and rotated (neox: rotate-half, gptj:
                       interleaved pairs) with cos, sin by position s; v is
                       copied.
  qk_norm_rope_bwd     the training step: that forward (round_norm=false)
                       with qkv and the weights requiring grad, then
                       torch.autograd.grad of (q, k, v) with (dq, dk, dv),
                       taking (qkv, q_weight, k_weight, cos, sin | inv_freq,
                       dq, dk, dv) -> d_qkv (cast to the dx option's type,
                       bf16|f32), d_q_weight, d_k_weight (cast to f32, as
                       fp8gen writes them). Its ideal_bytes are the training
                       step's: the forward's (qkv, weights, angles read; q,
                       k, v written) plus the backward's (qkv, weights,
                       angles, dq, dk, dv read; d_qkv and the weight
                       gradients written), set against fp8gen's forward plus
                       backward kernels. compiled and autotune compile the
                       forward chain with torch.compile (AOTAutograd compiles
                       its backward with it, as for any compiled module) and
                       call torch.autograd.grad outside it: under a
                       torch.compile of the whole step Dynamo (by default)
                       graph-breaks at torch.autograd.grad anyway, and
                       resuming there can lose the gradient edges of tensors
                       made inside the compiled region (pytorch#185829).

The MoE expert activation (options layout = split|interleaved, probs =
true|false, fp8, pow2 as the casts, quant):

  swiglu_probs         h[R,2F] bf16 (gate then up, or alternating with
                       layout=interleaved), probs[R] f32 (probs=true) ->
                       y = F.silu(gate) * up (bf16) * probs[:, None] (f32),
                       as bf16 (quant=none) or quantized as rowwise_cast or
                       tensorwise_cast quantize (quant=rowwise|tensorwise):
                       y[R,F] and inv_scale[R] or [].
  swiglu_probs_bwd     the training step: that forward (y bf16, and with
                       quant=rowwise its FP8 output) with h and probs
                       requiring grad, then torch.autograd.grad of y with dy
                       -> dh[R,2F] (bf16, or with quant=rowwise quantized per
                       row over its 2F gradients with inv_scale[R]),
                       d_probs[R] f32 (probs=true). Its ideal_bytes are the
                       step's, as for qk_norm_rope_bwd; compiled and autotune
                       compile silu * up * probs and call autograd outside.

The MX cast (options in = bf16|f32, fp8 = e4m3|e5m2, mx_round = floor|rceil,
dim = 0|1|both, scales = rowmajor|swizzled), written as torchao's to_mx is in
plain torch:

  mx_cast              x[M,K] -> q[M,K], scale[M,K/32] (dim=0: blocks of 32
                       along K), qt[K,M], scale_t[K,M/32] (dim=1: the same
                       cast of x.t().contiguous(), blocks of 32 along M), or
                       all four (dim=both, each from x). The E8M0 scales are
                       uint8 tensors of bytes X + 127 (0xFF: NaN). Each
                       block's amax (x viewed [..., n/32, 32], amax over the
                       last dim; a NaN propagates) gives X from its f32
                       bits, as torchao does, not from torch.log2 (whose f32
                       result rounds up to k just below 2^k): floor takes
                       amax's exponent field - emax (8 e4m3, 15 e5m2), at
                       least 0; rceil rounds descale = amax * fl(1/fmax) up
                       to a power of two from descale's exponent and
                       mantissa. A block with a NaN or Inf gets byte 0xFF and
                       NaN for all its q. q = fp8(clamp(x * 2^-X, -fmax,
                       fmax)), 2^-X the f32 of bits (254 - byte) << 23.
                       scales=swizzled rearranges each scale matrix as
                       torchao's to_blocked does (F.pad to 128 rows and 4
                       columns, view, permute, transpose), a flat tensor;
                       scales=gfx950 as hipBLASLt's pre-swizzled gfx950
                       layout (F.pad to 32 rows and 8 columns, view
                       [R/32, 2, 16, C/8, 2, 4], permute to tile row, tile
                       column, quarter, row of 16, half, row half), flat.
  grouped_mx_cast      x[T,K], offsets[E] -> qt[K,TP], scale_t[K,TP/32],
                       padded_offsets[E] (int32), TP = 32 * cdiv(T + 31E, 32):
                       each group's rows zero-padded to a multiple of 32, the
                       groups stacked and zero rows up to TP, cast as dim=1
                       (options in, fp8, mx_round). eager reads offsets on the
                       host and pads group by group (F.pad, cat); compiled
                       and autotune time a device-only form: the padded ends
                       by cumsum, each padded row's group by searchsorted, its
                       source row gathered (zeros past the group).

The blockwise cast (DeepSeek-V3's; options in, fp8, pow2 as the casts,
block = 1x128|128x1|128x128), written as DeepSeek's act_quant and
weight_quant are in plain torch:

  block_cast           x[M,K] -> q[M,K], inv_scale[M,cdiv(K,128)] (block=1x128:
                       blocks of 128 along K), qt[K,M], inv_scale_t[K,
                       cdiv(M,128)] (128x1: the same cast of
                       x.t().contiguous(), blocks of 128 along M), or q[M,K],
                       inv_scale[cdiv(M,128),cdiv(K,128)] (128x128: tiles).
                       M and K need not be multiples of 128: x is padded with
                       zeros (F.pad) to whole blocks, viewed [R, C/128, 128]
                       (or [M/128, 128, K/128, 128]), amax over the block's
                       dims (a NaN propagates, as in the casts), scaled and
                       quantized as the casts do, and the padding sliced off.
                       scales=colmajor (1x128 only): inv_scale[cdiv(K,128),
                       M rounded up to 4] as DeepGEMM reads it, x padded
                       with zero rows to a multiple of 4 and the scales
                       transposed (.t().contiguous()).

Inputs: activations randn (times 3 for the casts), weights 1 + 0.1*randn,
probabilities rand [0, 1),
inv_freq = 10000^(-2i/D), cos and sin of s * inv_freq[i] with i the pair
index of each column.
"""

import argparse
import datetime
import itertools
import json
import math
import os
import random
import statistics
import struct
import sys
import traceback
import zlib

# torch (and triton) are imported by main(), not here, so that the job
# handling below imports and tests on a machine without them.
torch = None
do_bench = None

EPS = 1e-12  # amax floor, so an all-zero group gets a finite scale
MX_BLOCK = 32  # elements sharing one E8M0 scale
BLOCK = 128  # the side of block_cast's (DeepSeek-V3's) blocks
L2_BYTES = 50 * 2**20  # H200 L2 if the device does not say; inputs rotate past twice this
MAX_COPIES = 64

# torch.compile mode -> the row's impl.
COMPILE_MODES = {"default": "compiled", "max-autotune-no-cudagraphs": "autotune"}
DEFAULT_MODES = ",".join(COMPILE_MODES)

FP8_NAMES = ("e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz")

# Bytes per element of the dtypes in the specs below (torch's names).
DTYPE_BYTES = {"bfloat16": 2, "float32": 4, "int32": 4, "uint8": 1,
               **{"float8_" + n: 1 for n in FP8_NAMES}}
SHORT_DTYPES = {"bf16": "bfloat16", "f32": "float32"}


def log(*args):
    print(*args, flush=True)


# ---- the ops' contract: sizes, options (first value the default) ----


class OpSpec:
    def __init__(self, sizes, options, fp8):
        self.sizes = sizes  # names, in the op's order
        self.options = options  # name -> allowed values, the default first
        self.fp8 = fp8  # whether the op writes FP8 (needs the job's fp8)


CAST_OPTIONS = {"in": ("bf16", "f32"), "fp8": ("e4m3", "e5m2"), "pow2": ("false", "true")}
MX_OPTIONS = {"in": ("bf16", "f32"), "fp8": ("e4m3", "e5m2"), "mx_round": ("floor", "rceil"),
              "dim": ("0", "1", "both"), "scales": ("rowmajor", "swizzled", "gfx950")}
QK_OPTIONS = {"order": ("bshd", "sbhd"), "rope": ("neox", "gptj"), "weight": ("bf16", "f32"),
              "eps": ("1e-6", "1e-5"), "angles": ("table", "theta")}

SWIGLU_OPTIONS = {"layout": ("split", "interleaved"), "probs": ("true", "false"), "fp8": ("e4m3", "e5m2"),
                  "pow2": ("false", "true")}

MOE_SIZES = ("T", "H", "E", "TOPK", "PAD")
EP_VALUES = ("8", "1", "2", "4", "16", "32")

OPS = {
    "rowwise_cast": OpSpec(("M", "K"), CAST_OPTIONS, True),
    "tensorwise_cast": OpSpec(("M", "K"), CAST_OPTIONS, True),
    "colwise_cast": OpSpec(("M", "K"), CAST_OPTIONS, True),
    "expert_colwise_cast": OpSpec(("E", "K", "N"), {**CAST_OPTIONS, "layout": ("kn", "nk")}, True),
    "grouped_colwise_cast": OpSpec(("T", "K", "E"), CAST_OPTIONS, True),
    "tensorwise_cast_transpose": OpSpec(("M", "K"), CAST_OPTIONS, True),
    "rowcol_cast": OpSpec(("M", "K"), CAST_OPTIONS, True),
    "grouped_rowcol_cast": OpSpec(("T", "K", "E"), CAST_OPTIONS, True),
    "mx_cast": OpSpec(("M", "K"), MX_OPTIONS, True),
    "grouped_mx_cast": OpSpec(("T", "K", "E"), dict({n: MX_OPTIONS[n] for n in ("in", "fp8", "mx_round")},
                                                    scales=("rowmajor", "swizzled")), True),
    "block_cast": OpSpec(("M", "K"), {**CAST_OPTIONS, "block": ("1x128", "128x1", "128x128"),
                                      "scales": ("rowmajor", "colmajor")}, True),
    "qk_norm_rope": OpSpec(("B", "S", "HQ", "HKV", "D"), {**QK_OPTIONS, "round_norm": ("false", "true")}, False),
    "qk_norm_rope_bwd": OpSpec(("B", "S", "HQ", "HKV", "D"), {**QK_OPTIONS, "dx": ("bf16", "f32")}, False),
    "swiglu_probs": OpSpec(("R", "F"), {**SWIGLU_OPTIONS, "quant": ("rowwise", "none", "tensorwise")}, True),
    "swiglu_probs_mx": OpSpec(("R", "F"), {n: SWIGLU_OPTIONS[n] for n in ("layout", "probs", "fp8")} |
                              {n: MX_OPTIONS[n] for n in ("mx_round", "scales")}, True),
    "moe_permute": OpSpec(MOE_SIZES, {**CAST_OPTIONS, "quant": ("rowwise", "none", "tensorwise"), "probs": ("true", "false"),
                                      "ep": EP_VALUES}, True),
    "moe_unpermute": OpSpec(MOE_SIZES, {"ep": EP_VALUES, "probs": ("true", "false")}, False),
    "moe_permute_bwd": OpSpec(MOE_SIZES, {"ep": EP_VALUES}, False),
    "moe_unpermute_bwd": OpSpec(MOE_SIZES, {"fp8": ("e5m2", "e4m3"), "pow2": ("false", "true"), "quant": ("rowwise", "none", "tensorwise"),
                                            "probs": ("true", "false"), "ep": EP_VALUES}, True),
    "swiglu_probs_bwd": OpSpec(("R", "F"), {**SWIGLU_OPTIONS, "quant": ("none", "rowwise"),
                                            "dy": ("bf16", "rowwise", "tensorwise")}, True),
}
LEGACY_OPS = ("rowwise_cast", "tensorwise_cast", "colwise_cast")
DENSE_CASTS = LEGACY_OPS + ("tensorwise_cast_transpose", "rowcol_cast", "mx_cast", "block_cast")  # x[M,K] in
GROUPED_CASTS = ("grouped_colwise_cast", "grouped_rowcol_cast", "grouped_mx_cast")
BACKWARDS = ("qk_norm_rope_bwd", "swiglu_probs_bwd")  # timed as the training step, forward then backward


# ---- jobs: parsing and validation (no torch) ----


class JobError(ValueError):
    """A job (or the jobs file) that breaks the contract above."""


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def resolve_fp8(family, target):
    """The torch FP8 format name for an option family, given the target's name.

    The target's name fixes the flavour (fnuz or not), the option the family:
    e4m3 on an e4m3fn target is e4m3fn, e5m2 there is e5m2, e5m2 on an
    e4m3fnuz target is e5m2fnuz.
    """
    if target not in FP8_NAMES:
        raise JobError(f"fp8 {target!r} is not one of {', '.join(FP8_NAMES)}")
    fnuz = target.endswith("fnuz")
    if family == "e4m3":
        return "e4m3fnuz" if fnuz else "e4m3fn"
    return "e5m2fnuz" if fnuz else "e5m2"


def validate_job(obj, index):
    """A job as read from JSON -> its normalised form, or JobError.

    A malformed job (wrong JSON types, sizes < 1, bad ideal_bytes, an FP8 op
    without fp8, HQ not a multiple of HKV, MX blocks that do not fit or an
    fnuz format for them) is an error. A well-formed job that names what this
    script does not know (an op, a size, an option or value, an FP8 format:
    fp8gen moved on) is kept with "unsupported" set to the reason, so that
    its rows say so and the rest of the run goes on.
    """
    if not isinstance(obj, dict):
        raise JobError(f"job {index}: not a JSON object")
    op, shape = obj.get("op"), obj.get("shape")
    if not isinstance(op, str) or not op:
        raise JobError(f"job {index}: op must be a non-empty string")
    if not isinstance(shape, str) or not shape:
        raise JobError(f"job {index} ({op}): shape must be a non-empty string label")
    where = f"job {index} ({op} {shape})"
    sizes, options = obj.get("sizes"), obj.get("options", {})
    if not isinstance(sizes, dict) or not all(is_int(v) and v >= 1 for v in sizes.values()):
        raise JobError(f"{where}: sizes must be an object of integers >= 1, got {sizes!r}")
    if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
        raise JobError(f"{where}: options must be an object of strings, got {options!r}")
    fp8, ideal = obj.get("fp8"), obj.get("ideal_bytes")
    if fp8 is not None and not isinstance(fp8, str):
        raise JobError(f"{where}: fp8 must be a string or null, got {fp8!r}")
    if not is_int(ideal) or ideal < 1:
        raise JobError(f"{where}: ideal_bytes = {ideal!r} is not an integer >= 1")
    job = {"index": index, "op": op, "shape": shape, "sizes": dict(sizes), "options": dict(options),
           "fp8": fp8 if fp8 in FP8_NAMES else None, "ideal_bytes": ideal, "unsupported": None}

    spec = OPS.get(op)
    if spec is None:
        job["unsupported"] = f"peers.py has no peer for op {op!r} (it has {', '.join(OPS)})"
        return job
    if spec.fp8 and fp8 is None:
        raise JobError(f"{where}: fp8 must name the target's torch FP8 format ({', '.join(FP8_NAMES)})")
    if set(sizes) != set(spec.sizes):
        job["unsupported"] = (f"sizes {', '.join(sorted(sizes))}: peers.py knows {op} with sizes "
                              f"{', '.join(spec.sizes)}")
        return job
    job["sizes"] = {n: sizes[n] for n in spec.sizes}
    extra = sorted(set(options) - set(spec.options))
    if extra:
        job["unsupported"] = f"peers.py does not know {op}'s option {', '.join(extra)}"
        return job
    norm = {}
    for n, values in spec.options.items():
        v = options.get(n, values[0])  # a missing option takes its default
        if v not in values:
            job["unsupported"] = f"peers.py does not know {op}'s option value {n}={v} (it has {'|'.join(values)})"
            return job
        norm[n] = v
    job["options"] = norm
    if op.startswith("qk_norm_rope"):
        if sizes["HQ"] % sizes["HKV"]:
            raise JobError(f"{where}: HQ = {sizes['HQ']} is not a multiple of HKV = {sizes['HKV']}")
        if sizes["D"] % 2:
            raise JobError(f"{where}: D = {sizes['D']} is odd; RoPE rotates pairs")
    if op == "swiglu_probs_mx" and sizes["F"] % MX_BLOCK:
        raise JobError(f"{where}: F = {sizes['F']} is not a multiple of {MX_BLOCK}, the MX block")
    if op == "mx_cast":
        for n, dims in (("K", ("0", "both")), ("M", ("1", "both"))):
            if norm["dim"] in dims and sizes[n] % MX_BLOCK:
                raise JobError(f"{where}: {n} = {sizes[n]} is not a multiple of {MX_BLOCK}, the MX block "
                               f"(dim={norm['dim']})")
    if op == "block_cast" and norm["scales"] == "colmajor" and norm["block"] != "1x128":
        raise JobError(f"{where}: scales=colmajor is block=1x128's layout, not block={norm['block']}'s")
    if spec.fp8:
        if fp8 not in FP8_NAMES:
            job["unsupported"] = f"fp8 {fp8!r}: peers.py knows {', '.join(FP8_NAMES)}"
            return job
        job["fp8"] = resolve_fp8(norm["fp8"], fp8)
        if op in ("mx_cast", "grouped_mx_cast", "swiglu_probs_mx") and job["fp8"].endswith("fnuz"):
            raise JobError(f"{where}: MX takes OCP's FP8 formats (e4m3fn, e5m2), not {job['fp8']}")
    else:
        job["fp8"] = None  # no FP8 in this op: whatever was given is ignored
    return job


def parse_jobs(data):
    """The decoded JSON of a jobs file -> the normalised jobs."""
    if not isinstance(data, list):
        raise JobError("the jobs file must hold a JSON list of jobs")
    return [validate_job(obj, i) for i, obj in enumerate(data)]


def load_jobs(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise JobError(f"{path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise JobError(f"{path}: not JSON: {e}") from None
    return parse_jobs(data)


def parse_shape(s):
    """The legacy MxK form."""
    try:
        m, k = (int(d) for d in s.strip().lower().split("x"))
    except ValueError:
        raise JobError(f"shape {s!r} is not MxK, e.g. 8192x8192") from None
    if m <= 0 or k <= 0:
        raise JobError(f"shape {s!r} has a non-positive size")
    return m, k


def legacy_jobs(ops, shapes, fp8):
    """Jobs for --ops a,b --shapes MxK,... --fp8 NAME: default options, our byte count."""
    names = [s.strip() for s in ops.split(",") if s.strip()]
    for n in names:
        if n not in LEGACY_OPS:
            raise JobError(f"--ops: {n!r} is not one of {', '.join(LEGACY_OPS)} (use --jobs for the others)")
    if fp8 not in FP8_NAMES:
        raise JobError(f"--fp8 {fp8!r} is not one of {', '.join(FP8_NAMES)}")
    dims = [parse_shape(s) for s in shapes.split(",") if s.strip()]
    family = "e5m2" if fp8.startswith("e5m2") else "e4m3"  # the old --fp8 named the format itself
    jobs = []
    for n in names:
        for m, k in dims:
            obj = {"op": n, "shape": f"{m}x{k}", "sizes": {"M": m, "K": k}, "options": {"fp8": family},
                   "fp8": fp8, "ideal_bytes": 1}
            job = validate_job(obj, len(jobs))
            job["ideal_bytes"] = peer_bytes(job)
            jobs.append(job)
    return jobs


def parse_modes(s):
    """--compile-modes: comma-separated torch.compile modes ('' for none)."""
    modes = [m.strip() for m in s.split(",") if m.strip()]
    for m in modes:
        if m not in COMPILE_MODES:
            raise JobError(f"--compile-modes: {m!r} is not one of {', '.join(COMPILE_MODES)}")
    return list(dict.fromkeys(modes))  # once each, in the order given


# ---- tensors of each op (no torch): (name, shape, torch dtype name) ----


def token_dims(job):
    """The two leading (token) dims of the QK tensors: (B, S), or (S, B) with sbhd."""
    s = job["sizes"]
    return (s["S"], s["B"]) if job["options"]["order"] == "sbhd" else (s["B"], s["S"])


def input_specs(job):
    """The peer's arguments, in call order."""
    op, s, o = job["op"], job["sizes"], job["options"]
    if op in DENSE_CASTS:
        return [("x", (s["M"], s["K"]), SHORT_DTYPES[o["in"]])]
    if op == "expert_colwise_cast":
        return [("w", (s["E"], s["K"], s["N"]), SHORT_DTYPES[o["in"]])]
    if op in GROUPED_CASTS:
        return [("x", (s["T"], s["K"]), SHORT_DTYPES[o["in"]]), ("offsets", (s["E"],), "int32")]
    if op == "moe_permute":
        specs = [("x", (s["T"], s["H"]), SHORT_DTYPES[o["in"]]), ("indices", (s["T"], s["TOPK"]), "int32")]
        return specs + ([("probs", (s["T"], s["TOPK"]), "float32")] if o["probs"] == "true" else [])
    if op == "moe_unpermute_bwd":
        specs = [("dy", (s["T"], s["H"]), "bfloat16"), ("row_map", (s["T"], s["TOPK"]), "int32")]
        if o["probs"] == "true":
            specs += [("probs", (s["T"], s["TOPK"]), "float32"), ("expert_out", (moe_capacity(s), s["H"]), "bfloat16")]
        return specs + [("offsets", (s["E"],), "int32"), ("counts", (s["E"],), "int32")]
    if op in ("moe_unpermute", "moe_permute_bwd"):
        rows = "expert_out" if op == "moe_unpermute" else "d_perm"
        specs = [(rows, (moe_capacity(s), s["H"]), "bfloat16"), ("row_map", (s["T"], s["TOPK"]), "int32")]
        return specs + ([("probs", (s["T"], s["TOPK"]), "float32")] if o.get("probs") == "true" else [])
    if op.startswith("swiglu_probs"):
        specs = [("h", (s["R"], 2 * s["F"]), "bfloat16")]
        if o["probs"] == "true":
            specs += [("probs", (s["R"],), "float32")]
        if op == "swiglu_probs_bwd" and o["dy"] == "bf16":
            specs += [("dy", (s["R"], s["F"]), "bfloat16")]
        elif op == "swiglu_probs_bwd":
            inv = (s["R"],) if o["dy"] == "rowwise" else (1,)
            specs += [("dy", (s["R"], s["F"]), "float8_" + job["fp8"]), ("dy_inv_scale", inv, "float32")]
        return specs
    tok = token_dims(job)
    d, hq, hkv = s["D"], s["HQ"], s["HKV"]
    w = SHORT_DTYPES[o["weight"]]
    specs = [("qkv", tok + ((hq + 2 * hkv) * d,), "bfloat16"), ("q_weight", (d,), w), ("k_weight", (d,), w)]
    if o["angles"] == "theta":
        specs += [("inv_freq", (d // 2,), "float32")]
    else:
        specs += [("cos", (s["S"], d), "float32"), ("sin", (s["S"], d), "float32")]
    if op == "qk_norm_rope_bwd":
        specs += [("dq", tok + (hq, d), "bfloat16"), ("dk", tok + (hkv, d), "bfloat16"),
                  ("dv", tok + (hkv, d), "bfloat16")]
    return specs


def output_specs(job):
    """What the peer returns, in order (tensorwise's inv_scale is 0-d, as users write it)."""
    op, s, o = job["op"], job["sizes"], job["options"]
    q = "float8_" + job["fp8"] if job["fp8"] else None
    if op == "rowwise_cast":
        return [("q", (s["M"], s["K"]), q), ("inv_scale", (s["M"],), "float32")]
    if op == "tensorwise_cast":
        return [("q", (s["M"], s["K"]), q), ("inv_scale", (), "float32")]
    if op == "colwise_cast":
        return [("qt", (s["K"], s["M"]), q), ("inv_scale", (s["K"],), "float32")]
    if op == "expert_colwise_cast":
        e, k, n = s["E"], s["K"], s["N"]
        first = ("q", (e, k, n), q) if o["layout"] == "kn" else ("qt", (e, n, k), q)
        return [first, ("inv_scale", (e, n), "float32")]
    if op == "grouped_colwise_cast":
        return [("qt", (s["K"], s["T"]), q), ("inv_scale", (s["E"], s["K"]), "float32")]
    if op == "tensorwise_cast_transpose":
        return [("q", (s["M"], s["K"]), q), ("qt", (s["K"], s["M"]), q), ("inv_scale", (), "float32")]
    if op == "rowcol_cast":
        return [("q", (s["M"], s["K"]), q), ("inv_scale_row", (s["M"],), "float32"),
                ("qt", (s["K"], s["M"]), q), ("inv_scale_col", (s["K"],), "float32")]
    if op == "grouped_rowcol_cast":
        return [("q", (s["T"], s["K"]), q), ("inv_scale_row", (s["T"],), "float32"),
                ("qt", (s["K"], s["T"]), q), ("inv_scale_col", (s["E"], s["K"]), "float32")]
    if op == "mx_cast":
        m, k = s["M"], s["K"]
        if o["scales"] in ("swizzled", "gfx950"):  # flat, padded to whole tiles
            n = swizzled_len if o["scales"] == "swizzled" else gfx950_len
            rows = [("q", (m, k), q), ("scale", (n(m, k // MX_BLOCK),), "uint8")]
            cols = [("qt", (k, m), q), ("scale_t", (n(k, m // MX_BLOCK),), "uint8")]
        else:
            rows = [("q", (m, k), q), ("scale", (m, k // MX_BLOCK), "uint8")]
            cols = [("qt", (k, m), q), ("scale_t", (k, m // MX_BLOCK), "uint8")]
        return {"0": rows, "1": cols, "both": rows + cols}[o["dim"]]
    if op == "grouped_mx_cast":
        tp = grouped_mx_columns(s["T"], s["E"])
        if o["scales"] == "swizzled":
            kp = -(-s["K"] // 128) * 128
            return [("qt", (s["K"], tp), q), ("scale_t", (kp, grouped_mx_scale_cols(s["T"], s["E"])), "uint8"),
                    ("padded_offsets", (s["E"],), "int32"), ("scale_offsets", (s["E"],), "int32")]
        return [("qt", (s["K"], tp), q), ("scale_t", (s["K"], tp // MX_BLOCK), "uint8"),
                ("padded_offsets", (s["E"],), "int32")]
    if op == "block_cast":
        m, k = s["M"], s["K"]
        mb, kb = -(-m // BLOCK), -(-k // BLOCK)
        if o["scales"] == "colmajor":
            return [("q", (m, k), q), ("inv_scale", (kb, -(-m // 4) * 4), "float32")]
        return {"1x128": [("q", (m, k), q), ("inv_scale", (m, kb), "float32")],
                "128x1": [("qt", (k, m), q), ("inv_scale_t", (k, mb), "float32")],
                "128x128": [("q", (m, k), q), ("inv_scale", (mb, kb), "float32")]}[o["block"]]
    if op == "swiglu_probs":
        if o["quant"] == "none":
            return [("y", (s["R"], s["F"]), "bfloat16")]
        inv = (s["R"],) if o["quant"] == "rowwise" else ()
        return [("y", (s["R"], s["F"]), q), ("inv_scale", inv, "float32")]
    if op == "swiglu_probs_mx":
        r, nb = s["R"], s["F"] // MX_BLOCK
        n = {"rowmajor": None, "swizzled": swizzled_len, "gfx950": gfx950_len}[o["scales"]]
        return [("y", (r, s["F"]), q), ("scale", (n(r, nb),) if n else (r, nb), "uint8")]
    if op == "moe_permute":
        cap, e = moe_capacity(s), s["E"]
        rows = [("out", (cap, s["H"]), SHORT_DTYPES[o["in"]])]
        if o["quant"] != "none":
            rows = [("out", (cap, s["H"]), q), ("inv_scale", (cap,) if o["quant"] == "rowwise" else (), "float32")]
        if o["probs"] == "true":
            rows += [("out_probs", (cap,), "float32")]
        return rows + [("row_map", (s["T"], s["TOPK"]), "int32"), ("offsets", (e,), "int32"), ("counts", (e,), "int32")]
    if op == "moe_unpermute":
        return [("y", (s["T"], s["H"]), "bfloat16")]
    if op == "moe_unpermute_bwd":
        cap = moe_capacity(s)
        rows = [("d_expert_out", (cap, s["H"]), "bfloat16")]
        if o["quant"] != "none":
            rows = [("d_expert_out", (cap, s["H"]), q), ("inv_scale", (cap,) if o["quant"] == "rowwise" else (), "float32")]
        return rows + ([("d_probs", (s["T"], s["TOPK"]), "float32")] if o["probs"] == "true" else [])
    if op == "moe_permute_bwd":
        return [("d_x", (s["T"], s["H"]), "bfloat16")]
    if op == "swiglu_probs_bwd":
        dh = [("dh", (s["R"], 2 * s["F"]), "bfloat16")]
        if o["quant"] == "rowwise":
            dh = [("dh", (s["R"], 2 * s["F"]), q), ("inv_scale", (s["R"],), "float32")]
        return dh + ([("d_probs", (s["R"],), "float32")] if o["probs"] == "true" else [])
    tok = token_dims(job)
    d, hq, hkv = s["D"], s["HQ"], s["HKV"]
    if op == "qk_norm_rope":
        return [("q", tok + (hq, d), "bfloat16"), ("k", tok + (hkv, d), "bfloat16"),
                ("v", tok + (hkv, d), "bfloat16")]
    return [("d_qkv", tok + ((hq + 2 * hkv) * d,), SHORT_DTYPES[o["dx"]]),
            ("d_q_weight", (d,), "float32"), ("d_k_weight", (d,), "float32")]


def spec_bytes(specs):
    return sum(math.prod(shape) * DTYPE_BYTES[dtype] for _, shape, dtype in specs)


def forward_job(job):
    """The forward job whose backward a backward job (qk_norm_rope_bwd,
    swiglu_probs_bwd) is: fp8gen's forward takes the options it shares with
    the backward (swiglu's quant too: rowwise FP8 y before rowwise FP8 dh)."""
    if job["op"] == "swiglu_probs_bwd":
        return {**job, "op": "swiglu_probs", "options": {k: v for k, v in job["options"].items() if k != "dy"}}
    o = {k: v for k, v in job["options"].items() if k != "dx"}
    return {**job, "op": "qk_norm_rope", "options": {**o, "round_norm": "false"}}


def peer_bytes(job):
    """This script's count of the ideal bytes, to cross-check fp8gen's: inputs
    read once and outputs written once; for the backward, the training step's
    (the forward's bytes too)."""
    n = spec_bytes(input_specs(job)) + spec_bytes(output_specs(job))
    if job["op"] in BACKWARDS:
        n += peer_bytes(forward_job(job))
    return n


def verify_outputs(outs, specs):
    """None if outs (tensors, or anything with .shape and .dtype) match specs, else why not."""
    if not isinstance(outs, (tuple, list)) or len(outs) != len(specs):
        n = len(outs) if isinstance(outs, (tuple, list)) else type(outs).__name__
        return f"peer returned {n} outputs, want {len(specs)} ({', '.join(s[0] for s in specs)})"
    bad = []
    for t, (name, shape, dtype) in zip(outs, specs):
        got_shape, got_dtype = tuple(t.shape), str(t.dtype).replace("torch.", "")
        if got_shape != tuple(shape) or got_dtype != dtype:
            bad.append(f"{name} is {got_dtype}{list(got_shape)}, want {dtype}{list(shape)}")
    return "; ".join(bad) or None


# ---- input data (no torch) ----


def job_seed(job):
    """A seed fixed by the job's op, label, sizes and options (not Python's hash())."""
    key = json.dumps([job["op"], job["shape"], job["sizes"], job["options"]], sort_keys=True)
    return zlib.crc32(key.encode())


def group_sizes(t, e, rng):
    """Sizes of e token groups summing to t: an exponential spread, one group empty where e >= 3."""
    w = [rng.expovariate(1.0) for _ in range(e)]
    total = sum(w)
    sizes = [int(t * x / total) for x in w]
    sizes[rng.randrange(e)] += t - sum(sizes)  # what the rounding down left
    if e >= 3:  # an empty group, as routing gives: its rows go to the next group
        g = rng.randrange(e)
        sizes[(g + 1) % e] += sizes[g]
        sizes[g] = 0
    return sizes


def moe_capacity(s):
    """The permuted rows' capacity: the most any routing fills."""
    return s["T"] * s["TOPK"] + s["E"] * (s["PAD"] - 1)


def cumulative(sizes):
    return list(itertools.accumulate(sizes))


def rope_pair_index(d, rope):
    """For each of the d columns, the frequency index i of s * 10000^(-2i/d)."""
    if rope == "gptj":
        return [c // 2 for c in range(d)]  # interleaved pairs (2i, 2i+1)
    return [c % (d // 2) for c in range(d)]  # rotate-half: pairs (i, i + d/2)


def n_copies(set_bytes, l2):
    """How many copies of an input set of set_bytes cycle past twice the L2."""
    return min(MAX_COPIES, max(1, math.ceil(2 * l2 / max(1, set_bytes))))


def copy_size(ideal):
    """Bytes each of src and dst of the copy that moves ideal bytes (read + written)."""
    return (ideal + 1) // 2


# ---- rows and the table (no torch) ----


def make_row(job, impl, time_us, nbytes, copy_gbps, common, **extra):
    """A row; numbers only where time_us is a positive time."""
    r = {"op": job["op"], "shape": job["shape"], "impl": impl, "time_us": None, "bytes": nbytes,
         "gb_per_s": None, "pct_copy": None, **common, "fp8": job["fp8"], "options": job["options"]}
    r.update((k, v) for k, v in extra.items() if v is not None)
    if time_us and time_us > 0 and math.isfinite(time_us):
        r["time_us"] = time_us
        r["gb_per_s"] = nbytes / time_us / 1e3
        if copy_gbps:
            r["pct_copy"] = 100 * r["gb_per_s"] / copy_gbps
    return r


def fmt(v, spec):
    if v is None:
        return format("-", ">" + spec.split(".")[0])
    return format(v, spec)


def row_line(r):
    err = "  ERROR " + r["error"] if r.get("error") else ""
    return (f"  {r['impl']:9s} {fmt(r['time_us'], '10.1f')} us  {fmt(r['gb_per_s'], '7.0f')} GB/s  "
            f"{fmt(r['pct_copy'], '5.1f')}% copy{err}")


def format_table(rows):
    """The summary table, one line per row."""
    ow = max([20] + [len(r["op"]) for r in rows])
    sw = max([11] + [len(r["shape"]) for r in rows])
    lines = [f"{'op':{ow}s} {'shape':{sw}s} {'impl':9s} {'time us':>10s} {'GB/s':>7s} {'% copy':>7s}"]
    for r in rows:
        lines.append(f"{r['op']:{ow}s} {r['shape']:{sw}s} {r['impl']:9s} {fmt(r['time_us'], '10.1f')} "
                     f"{fmt(r['gb_per_s'], '7.0f')} {fmt(r['pct_copy'], '7.1f')}"
                     + ("  error" if r.get("error") else ""))
    return lines


def short_error(e):
    """The first line of an exception and its last informative one."""
    boilerplate = ("Set TORCHDYNAMO_VERBOSE", "For even more developer context", "You can suppress")
    lines = [ln.strip() for ln in f"{type(e).__name__}: {e}".splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(boilerplate)]
    lines = [ln.split(" Set TORCHDYNAMO_VERBOSE")[0] for ln in lines] or [type(e).__name__]
    msg = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return msg[:500]


def write_json(path, rows):
    """Write rows atomically: a temporary file in the same directory, renamed."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(rows, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def cycling(fn, arg_sets):
    """A no-argument call of fn on the next argument tuple, round and round."""
    it = itertools.cycle(arg_sets)
    return lambda: fn(*next(it))


# ---- the peers (torch from here on) ----


class Peer:
    """eager: the function timed as eager; compile(mode): the one timed compiled;
    notes for the rows of each, where they differ from the plain reading."""

    def __init__(self, eager, compile_fn, note=None, compile_note=None):
        self.eager = eager
        self.compile = compile_fn
        self.note = note
        self.compile_note = compile_note


def compile_it(fn):
    return lambda mode: torch.compile(fn, mode=mode, dynamic=False)


def cast_peer(job):
    op, o = job["op"], job["options"]
    fp8 = getattr(torch, "float8_" + job["fp8"])
    fmax = float(torch.finfo(fp8).max)
    pow2 = o["pow2"] == "true"

    def scale_of(amax):
        scale = fmax / amax.clamp(min=EPS)
        if pow2:
            scale = torch.exp2(torch.floor(torch.log2(scale)))
        return scale

    def quantize(xf, scale):
        # torch's cast to fp8 does not saturate (e4m3fn overflows to NaN): clamp first.
        return (xf * scale).clamp(-fmax, fmax).to(fp8)

    def rowwise_cast(x):
        xf = x.float()
        scale = scale_of(xf.abs().amax(dim=1))
        return quantize(xf, scale[:, None]), 1.0 / scale

    def tensorwise_cast(x):
        xf = x.float()
        scale = scale_of(xf.abs().amax())
        return quantize(xf, scale), 1.0 / scale

    def colwise_cast(x):
        xf = x.float()
        scale = scale_of(xf.abs().amax(dim=0))
        return quantize(xf, scale[None, :]).t().contiguous(), 1.0 / scale

    nk = o.get("layout") == "nk"

    def expert_colwise_cast(w):
        wf = w.float()
        scale = scale_of(wf.abs().amax(dim=1))  # [E, N]: over K
        q = quantize(wf, scale[:, None, :])
        if nk:
            q = q.transpose(1, 2).contiguous()
        return q, 1.0 / scale

    def grouped_colwise_cast(x, offsets):
        # What users write: the group ends on the host (a sync), a loop over groups.
        xf = x.float()
        scales, parts, lo = [], [], 0
        for hi in offsets.tolist():
            g = xf[lo:hi]
            amax = g.abs().amax(dim=0) if hi > lo else xf.new_zeros((xf.shape[1],))  # amax of no rows fails
            scale = scale_of(amax)
            scales.append(scale)
            parts.append(g * scale)
            lo = hi
        scale = torch.stack(scales)
        qt = torch.cat(parts).clamp(-fmax, fmax).to(fp8).t().contiguous()
        return qt, 1.0 / scale

    def grouped_colwise_cast_nosync(x, offsets):
        # The same without reading offsets on the host: each row's group by
        # searchsorted (group g holds rows offsets[g-1] .. offsets[g]-1), the
        # amaxes by scatter_reduce. Empty groups keep amax 0, as in the loop.
        xf = x.float()
        t, k = xf.shape
        rows = torch.arange(t, device=x.device, dtype=offsets.dtype)
        gid = torch.searchsorted(offsets, rows, right=True)
        amax = torch.zeros(offsets.shape[0], k, device=x.device, dtype=torch.float32).scatter_reduce(
            0, gid[:, None].expand(t, k), xf.abs(), reduce="amax", include_self=True)
        scale = scale_of(amax)
        return quantize(xf, scale[gid]).t().contiguous(), 1.0 / scale

    # The dual casts the plain-torch way: each orientation cast from x.
    def tensorwise_cast_transpose(x):
        xf = x.float()
        scale = scale_of(xf.abs().amax())
        return quantize(xf, scale), quantize(xf.t(), scale).contiguous(), 1.0 / scale

    def rowcol_cast(x):
        q, inv_row = rowwise_cast(x)
        qt, inv_col = colwise_cast(x)
        return q, inv_row, qt, inv_col

    def grouped_rowcol_cast(x, offsets):
        q, inv_row = rowwise_cast(x)
        qt, inv_col = grouped_colwise_cast(x, offsets)
        return q, inv_row, qt, inv_col

    def grouped_rowcol_cast_nosync(x, offsets):
        q, inv_row = rowwise_cast(x)
        qt, inv_col = grouped_colwise_cast_nosync(x, offsets)
        return q, inv_row, qt, inv_col

    if op == "grouped_rowcol_cast":
        return Peer(grouped_rowcol_cast, compile_it(grouped_rowcol_cast_nosync),
                    note="the rows as rowwise_cast; eager reads offsets on the host (a sync per call) and loops over the groups",
                    compile_note="the rows as rowwise_cast; the groups device-only: searchsorted, scatter_reduce(amax)")
    if op == "grouped_colwise_cast":
        return Peer(grouped_colwise_cast, compile_it(grouped_colwise_cast_nosync),
                    note="eager reads offsets on the host (offsets.tolist(), a sync per call) and loops over the groups",
                    compile_note="a device-only form: row groups by searchsorted, amaxes by scatter_reduce(amax)")
    fn = {"rowwise_cast": rowwise_cast, "tensorwise_cast": tensorwise_cast, "colwise_cast": colwise_cast,
          "expert_colwise_cast": expert_colwise_cast, "tensorwise_cast_transpose": tensorwise_cast_transpose,
          "rowcol_cast": rowcol_cast}[op]
    return Peer(fn, compile_it(fn))


def f32_value(v):
    """v rounded to the nearest float32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def swizzled_len(rows, cols):
    """The bytes of a [rows, cols] scale matrix in 128x4 tiles, padded."""
    return -(-rows // 128) * 128 * (-(-cols // 4) * 4)


def gfx950_len(rows, cols):
    """The bytes of a [rows, cols] scale matrix in gfx950's 32x8 tiles, padded."""
    return -(-rows // 32) * 32 * (-(-cols // 8) * 8)


def mx_quantizer(job):
    """The MX cast of the job's options as torchao's to_mx writes it in plain
    torch: x[R, C] viewed as blocks of 32 along C, the E8M0 byte from the
    bits of each block's amax, x scaled by the power of two made from that
    byte -> q[R, C] fp8, scale[R, C/32] E8M0 bytes."""
    o = job["options"]
    fp8 = getattr(torch, "float8_" + job["fp8"])
    fmax = float(torch.finfo(fp8).max)
    emax = math.frexp(fmax)[1] - 1  # the largest power of two's exponent: 8 (e4m3), 15 (e5m2)
    inv_fmax = f32_value(1 / fmax)  # an f32 constant, so the product is the f32 one whatever torch does
    rceil = o["mx_round"] == "rceil"

    def mx_blocks(x):
        r, c = x.shape
        xb = x.float().reshape(r, c // MX_BLOCK, MX_BLOCK)
        amax = xb.abs().amax(dim=-1)  # NaN if the block holds one
        exp = (amax.view(torch.int32) >> 23) & 0xFF  # biased; 255: Inf or NaN
        if rceil:
            d = (amax * inv_fmax).view(torch.int32)
            de, man = (d >> 23) & 0xFF, d & 0x7FFFFF
            # The smallest power of two >= descale. A subnormal descale is
            # at most 2^-127 (byte 0) up to mantissa 0x400000, else 2^-126.
            s = de + torch.where(de == 0, man > 0x400000, man != 0)
        else:
            s = (exp - emax).clamp(min=0)  # floor(log2 amax) - emax + 127, at least 0
        s = torch.where(exp == 255, 255, s)
        # 2^-X in f32, normal for every byte a finite block gets (<= 247);
        # 0xFF makes -Inf here, and its block is NaN below anyway.
        recip = ((254 - s) << 23).view(torch.float32)
        y = torch.where((s == 255)[..., None], math.nan, xb * recip[..., None])
        # torch's cast to fp8 does not saturate (e4m3fn overflows to NaN): clamp first.
        q = y.clamp(-fmax, fmax).to(fp8).reshape(r, c)
        return q, s.to(torch.uint8)

    return mx_blocks


def swizzle_128x4(s):
    """s[R, C] -> the flat layout the GEMMs read (torchao's to_blocked):
    zero-padded to 128x4 tiles, each tile's rows r and r+32, r+64, r+96
    side by side."""
    r, c = s.shape
    rp, cp = -(-r // 128) * 128, -(-c // 4) * 4
    p = torch.nn.functional.pad(s, (0, cp - c, 0, rp - r))
    t = p.view(rp // 128, 128, cp // 4, 4).permute(0, 2, 1, 3)
    return t.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1)


def swizzle_gfx950(s):
    """s[R, C] -> hipBLASLt's pre-swizzled gfx950 layout: zero-padded to
    32x8 tiles, each tile's bytes ordered by column quarter, row of 16,
    column half, row half."""
    r, c = s.shape
    rp, cp = -(-r // 32) * 32, -(-c // 8) * 8
    p = torch.nn.functional.pad(s, (0, cp - c, 0, rp - r))
    # [tile row, row half, row of 16, tile column, column half, column quarter]
    t = p.view(rp // 32, 2, 16, cp // 8, 2, 4).permute(0, 3, 5, 2, 4, 1)
    return t.reshape(-1)


def mx_peer(job):
    """mx_cast: mx_quantizer's cast of x (dim=0), of x.t().contiguous()
    (dim=1), or both, the scales swizzled as torchao's to_blocked does."""
    o = job["options"]
    dim = o["dim"]
    mx_blocks = mx_quantizer(job)

    layouts = {"rowmajor": lambda s: s, "swizzled": swizzle_128x4, "gfx950": swizzle_gfx950}

    def blocks(x):
        q, s = mx_blocks(x)
        return q, layouts[o["scales"]](s)

    def mx_cast(x):
        if dim == "0":
            return blocks(x)
        qt = blocks(x.t().contiguous())
        return qt if dim == "1" else blocks(x) + qt

    return Peer(mx_cast, compile_it(mx_cast))


def grouped_mx_columns(t, e):
    """qt's row length TP: T rows and at most 31 padding rows a group, in whole blocks."""
    return -(-(t + 31 * e) // MX_BLOCK) * MX_BLOCK


def grouped_mx_scale_cols(t, e):
    """The swizzled scale_t's row length SC: every group's blocks rounded up to 4."""
    return -(-(grouped_mx_columns(t, e) // MX_BLOCK + 3 * e) // 4) * 4


def grouped_mx_peer(job):
    """grouped_mx_cast: each group's rows of x padded with zero rows to a
    multiple of 32, the groups stacked, zero rows up to TP, and that
    cast along its rows as mx_cast's dim=1 casts x.t().contiguous();
    under scales=swizzled each group's scales swizzled alone and the
    groups' tiles stored one after another (torchao's blocked layout for
    groups along K)."""
    mx_blocks = mx_quantizer(job)
    t, k, e = (job["sizes"][n] for n in ("T", "K", "E"))
    tp = grouped_mx_columns(t, e)

    swizzled = job["options"]["scales"] == "swizzled"
    kp, sc = -(-k // 128) * 128, grouped_mx_scale_cols(t, e)

    def per_group_swizzle(st, ends):
        # torchao's blocked layout of groups along K, in its reference's
        # loop: each group's scales swizzled alone (to_blocked), the groups'
        # tiles one after another, zeros after the last.
        parts, first, width, widths, prev = [], 0, 0, [], 0
        for end in ends:
            nb, prev = (end - prev) // MX_BLOCK, end
            if nb:
                parts.append(swizzle_128x4(st[:, first:first + nb]))
                first, width = first + nb, width + -(-nb // 4) * 4
            widths.append(width)
        parts.append(st.new_zeros(((sc - width) * kp,)))
        return torch.cat(parts).view(kp, sc), torch.tensor(widths, dtype=torch.int32, device=st.device)

    def per_group_swizzle_nosync(st, ends):
        # Device-only: each scale's place from its group's bounds, by index
        # arithmetic, scattered (as int32, the blocks past the last group
        # into one slot past the end).
        bends = ends >> 5
        bstarts = torch.cat([bends[:1] * 0, bends[:-1]])
        cp = ((bends - bstarts + 3) >> 2) << 2
        widths = cp.cumsum(0)
        nblk = st.shape[1]
        i = torch.arange(nblk, device=st.device, dtype=widths.dtype)
        g = torch.searchsorted(bends, i, right=True).clamp(max=e - 1)
        j = (i - bstarts[g])[None, :]
        w = cp[g][None, :]
        r = torch.arange(k, device=st.device, dtype=widths.dtype)[:, None]
        f = ((((r >> 7) * (w >> 2) + (j >> 2)) << 9) + ((r & 31) << 4) + (((r >> 5) & 3) << 2) + (j & 3))
        at = (widths[g] - cp[g])[None, :] * kp + f
        at = torch.where((i < bends[g])[None, :], at, kp * sc)
        out = torch.zeros(kp * sc + 1, device=st.device, dtype=torch.int32).scatter_reduce(
            0, at.flatten(), st.to(torch.int32).flatten(), "amax")
        return out[:kp * sc].to(torch.uint8).view(kp, sc), widths.to(torch.int32)

    def grouped_mx_cast(x, offsets):
        # What users write: the group ends on the host (a sync), a loop over groups.
        parts, ends, lo, end = [], [], 0, 0
        for hi in offsets.tolist():
            n = hi - lo
            padded = -(-n // MX_BLOCK) * MX_BLOCK
            parts.append(torch.nn.functional.pad(x[lo:hi], (0, 0, 0, padded - n)))
            end += padded
            ends.append(end)
            lo = hi
        parts.append(x.new_zeros((tp - end, k)))
        qt, st = mx_blocks(torch.cat(parts).t().contiguous())
        ends_t = torch.tensor(ends, dtype=torch.int32, device=x.device)
        if swizzled:
            scale, widths = per_group_swizzle(st, ends)
            return qt, scale, ends_t, widths
        return qt, st, ends_t

    def grouped_mx_cast_nosync(x, offsets):
        # Device-only: the padded ends by cumsum, each padded row's group by
        # searchsorted, its source row gathered (zero past its group's rows).
        starts = torch.cat([offsets[:1] * 0, offsets[:-1]])
        padded = ((offsets - starts + (MX_BLOCK - 1)) >> 5) << 5
        ends = padded.cumsum(0)
        slots = torch.arange(tp, device=x.device, dtype=ends.dtype)
        g = torch.searchsorted(ends, slots, right=True).clamp(max=e - 1)
        src = starts[g] + slots - (ends[g] - padded[g])
        ok = (slots < ends[g]) & (src < offsets[g])
        xp = torch.where(ok[:, None], x[src.clamp(0, t - 1)], 0)
        qt, st = mx_blocks(xp.t().contiguous())
        if swizzled:
            scale, widths = per_group_swizzle_nosync(st, ends)
            return qt, scale, ends.to(torch.int32), widths
        return qt, st, ends.to(torch.int32)

    note = "eager reads offsets on the host (offsets.tolist(), a sync per call), pads each group and stacks them"
    compile_note = "a device-only form: padded ends by cumsum, each padded row's source by searchsorted and a gather"
    if swizzled:
        note += "; the scales swizzled a group at a time (torchao's reference loop, not its Triton kernel)"
        compile_note += "; the scales placed by index arithmetic and scatter_reduce"
    return Peer(grouped_mx_cast, compile_it(grouped_mx_cast_nosync), note=note, compile_note=compile_note)


def block_peer(job):
    """block_cast the way DeepSeek-V3's act_quant (1x128) and weight_quant
    (128x128) read in plain torch: x zero-padded to whole blocks, viewed as
    blocks, one amax per block, scaled and quantized as cast_peer's casts
    scale a group, the padding sliced off."""
    o = job["options"]
    fp8 = getattr(torch, "float8_" + job["fp8"])
    fmax = float(torch.finfo(fp8).max)
    pow2 = o["pow2"] == "true"
    block = o["block"]

    def scale_of(amax):  # as cast_peer's: a NaN in amax propagates, an Inf gives scale 0
        scale = fmax / amax.clamp(min=EPS)
        if pow2:
            scale = torch.exp2(torch.floor(torch.log2(scale)))
        return scale

    def quantize(xf, scale):
        # torch's cast to fp8 does not saturate (e4m3fn overflows to NaN): clamp first.
        return (xf * scale).clamp(-fmax, fmax).to(fp8)

    def padded(xf, rows):
        """xf[R, C] with zeros after its last column (and, with rows, its
        last row) up to a multiple of BLOCK: zeros leave every amax as it is."""
        r, c = xf.shape
        pc, pr = -c % BLOCK, (-r % BLOCK if rows else 0)
        return torch.nn.functional.pad(xf, (0, pc, 0, pr)) if pc or pr else xf

    def rows_1x128(x):
        """x[R, C] -> q[R, C], inv_scale[R, cdiv(C, 128)]: blocks of 128 along C."""
        r, c = x.shape
        xb = padded(x.float(), False).view(r, -1, BLOCK)
        scale = scale_of(xb.abs().amax(dim=-1))
        q = quantize(xb, scale[:, :, None]).view(r, -1)[:, :c].contiguous()
        return q, 1.0 / scale

    def tiles_128x128(x):
        """x[M, K] -> q[M, K], inv_scale[cdiv(M, 128), cdiv(K, 128)]: 128x128 tiles."""
        m, k = x.shape
        xp = padded(x.float(), True)
        mp, kp = xp.shape
        xb = xp.view(mp // BLOCK, BLOCK, kp // BLOCK, BLOCK)
        scale = scale_of(xb.abs().amax(dim=(1, 3)))
        q = quantize(xb, scale[:, None, :, None]).view(mp, kp)[:m, :k].contiguous()
        return q, 1.0 / scale

    def block_cast(x):
        if block == "1x128" and o["scales"] == "colmajor":
            # DeepGEMM's layout: inv_scale[cdiv(K, 128), M rounded up to 4],
            # M contiguous; the rows past M are zero rows' scales.
            m = x.shape[0]
            pr = -m % 4
            q, inv = rows_1x128(torch.nn.functional.pad(x, (0, 0, 0, pr)) if pr else x)
            return (q[:m].contiguous() if pr else q), inv.t().contiguous()
        if block == "1x128":
            return rows_1x128(x)
        if block == "128x1":  # the transposed x in 1x128 blocks: qt[K, M], inv_scale_t[K, cdiv(M, 128)]
            return rows_1x128(x.t().contiguous())
        return tiles_128x128(x)

    return Peer(block_cast, compile_it(block_cast))


def qk_forward(job, round_norm):
    """The forward chain: qk_norm_rope(qkv, q_weight, k_weight, *angles) -> (q, k, v),
    angles being (cos, sin) or, with angles=theta, (inv_freq,)."""
    s, o = job["sizes"], job["options"]
    hq, hkv, d, sl = s["HQ"], s["HKV"], s["D"], s["S"]
    g = hq // hkv
    t0, t1 = token_dims(job)
    eps = float(o["eps"])
    gptj = o["rope"] == "gptj"
    sbhd = o["order"] == "sbhd"
    theta = o["angles"] == "theta"

    def pairs(a):
        """[..., D/2] per frequency -> [..., D] per column, by the pairing."""
        if gptj:  # columns 2i, 2i+1
            return torch.stack((a, a), dim=-1).flatten(-2)
        return torch.cat((a, a), dim=-1)  # columns i, i + D/2

    def rotate(n):
        if gptj:  # rot(n)[2i] = -n[2i+1], rot(n)[2i+1] = n[2i]
            return torch.stack((-n[..., 1::2], n[..., 0::2]), dim=-1).flatten(-2)
        return torch.cat((-n[..., d // 2:], n[..., :d // 2]), dim=-1)

    def norm_rope(t, w, cos, sin):
        t = t.float()
        n = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * w.float()
        if round_norm:
            n = n.to(torch.bfloat16).float()
        return (n * cos + rotate(n) * sin).to(torch.bfloat16).contiguous()

    def qk_norm_rope(qkv, q_weight, k_weight, *angles):
        if theta:  # the tables from the positions, as rotary embeddings do each forward
            (inv_freq,) = angles
            pos = torch.arange(sl, device=qkv.device, dtype=torch.float32)
            ang = pairs(pos[:, None] * inv_freq[None, :])
            cos, sin = ang.cos(), ang.sin()
        else:
            cos, sin = angles
        # Megatron's packing: per KV group, G query heads, then k, then v.
        x = qkv.view(t0, t1, hkv, g + 2, d)
        q = x[:, :, :, :g, :].reshape(t0, t1, hq, d)
        k = x[:, :, :, g, :]
        v = x[:, :, :, g + 1, :]
        # cos, sin [S, D] by position s: dim 0 of sbhd, dim 1 of bshd.
        if sbhd:
            cos, sin = cos[:, None, None, :], sin[:, None, None, :]
        else:
            cos, sin = cos[None, :, None, :], sin[None, :, None, :]
        return norm_rope(q, q_weight, cos, sin), norm_rope(k, k_weight, cos, sin), v.contiguous()

    return qk_norm_rope


def qk_train_step(forward, dx):
    """The forward, then its backward:
    (qkv, q_weight, k_weight, *angles, dq, dk, dv) -> (d_qkv, d_q_weight, d_k_weight)."""
    dx_dtype = getattr(torch, SHORT_DTYPES[dx])

    def qk_norm_rope_bwd(qkv, q_weight, k_weight, *rest):
        angles, (dq, dk, dv) = rest[:-3], rest[-3:]
        with torch.enable_grad():
            x = qkv.detach().requires_grad_()
            qw = q_weight.detach().requires_grad_()
            kw = k_weight.detach().requires_grad_()
            q, k, v = forward(x, qw, kw, *angles)
            d_qkv, d_qw, d_kw = torch.autograd.grad((q, k, v), (x, qw, kw), (dq, dk, dv))
        return d_qkv.to(dx_dtype), d_qw.float(), d_kw.float()

    return qk_norm_rope_bwd


def swiglu_forward(job):
    """The forward the plain-torch way: (h, [probs]) -> (y bf16 for autograd,
    the outputs): F.silu(gate) * up * probs[:, None] (f32 for the product
    with probs), then y as bf16 or quantized as the casts' peers do."""
    o, f = job["options"], job["sizes"]["F"]
    quant, interleaved = o["quant"], o["layout"] == "interleaved"
    quantize = quantizer(job)

    def swiglu_probs(h, *probs):
        g, u = (h[:, 0::2], h[:, 1::2]) if interleaved else (h[:, :f], h[:, f:])
        y = torch.nn.functional.silu(g) * u
        if probs:
            y = y.float() * probs[0][:, None]
        if quant == "none":
            return (y.to(torch.bfloat16),)
        return quantize(y.float(), quant)

    return swiglu_probs


def swiglu_mx_peer(job):
    """swiglu_probs_mx: the forward's f32 activations, then mx_cast's peer
    (dim=0) of them, the scales laid out as torchao's to_blocked does."""
    o, f = job["options"], job["sizes"]["F"]
    interleaved = o["layout"] == "interleaved"
    mx_blocks = mx_quantizer(job)
    layout = {"rowmajor": lambda s: s, "swizzled": swizzle_128x4, "gfx950": swizzle_gfx950}[o["scales"]]

    def swiglu_probs_mx(h, *probs):
        g, u = (h[:, 0::2], h[:, 1::2]) if interleaved else (h[:, :f], h[:, f:])
        y = torch.nn.functional.silu(g.float()) * u.float()
        if probs:
            y = y * probs[0][:, None]
        q, s = mx_blocks(y)
        return q, layout(s)

    return Peer(swiglu_probs_mx, compile_it(swiglu_probs_mx))


def quantizer(job):
    """quantize(xf, "rowwise" | "tensorwise") -> (q, inv_scale): the casts' peers' numerics."""
    fp8 = getattr(torch, "float8_" + job["fp8"])
    fmax = float(torch.finfo(fp8).max)
    pow2 = job["options"]["pow2"] == "true"

    def quantize(xf, how):
        amax = xf.abs().amax(dim=1) if how == "rowwise" else xf.abs().amax()
        scale = fmax / amax.clamp(min=EPS)
        if pow2:
            scale = torch.exp2(torch.floor(torch.log2(scale)))
        s = scale[:, None] if how == "rowwise" else scale
        return (xf * s).clamp(-fmax, fmax).to(fp8), 1.0 / scale

    return quantize


def swiglu_train_step(job, compiled=None):
    """The forward, then its backward by torch.autograd.grad:
    (h, [probs], dy) -> (forward's outputs are made and dropped) dh (bf16, or
    rowwise FP8 with its inv_scale), [d_probs f32]. compiled, if given, is
    the differentiable part (silu · up · probs) under torch.compile."""
    o, f = job["options"], job["sizes"]["F"]
    interleaved, rowwise = o["layout"] == "interleaved", o["quant"] == "rowwise"
    quantize = quantizer(job)

    def act(h, *probs):
        g, u = (h[:, 0::2], h[:, 1::2]) if interleaved else (h[:, :f], h[:, f:])
        y = torch.nn.functional.silu(g) * u
        if probs:
            y = (y.float() * probs[0][:, None]).to(torch.bfloat16)
        return y

    fwd = compiled(act) if compiled else act

    def swiglu_probs_bwd(h, *rest):
        if o["dy"] == "bf16":
            probs, dy = rest[:-1], rest[-1]
        else:  # FP8 dy, dequantized to the bf16 gradient of y
            probs, (dq, inv) = rest[:-2], rest[-2:]
            dy = (dq.float() * (inv[:, None] if o["dy"] == "rowwise" else inv)).to(torch.bfloat16)
        with torch.enable_grad():
            hh = h.detach().requires_grad_()
            pp = tuple(p.detach().requires_grad_() for p in probs)
            y = fwd(hh, *pp)
            if rowwise:
                quantize(y.detach().float(), "rowwise")  # the forward's FP8 output
            grads = torch.autograd.grad(y, (hh,) + pp, dy)
        dh = grads[0]
        out = quantize(dh.float(), "rowwise") if rowwise else (dh,)
        return tuple(out) + tuple(g.float() for g in grads[1:])

    return swiglu_probs_bwd


def moe_routing(job, dev, gen):
    """Each token's TOPK distinct experts of E·ep, uniformly; the rank's the
    first E, the rest −1 (fp8gen's generator's rule, not its draws)."""
    s = job["sizes"]
    e, topk = s["E"], s["TOPK"]
    g = max(e * int(job["options"]["ep"]), topk)
    picks = torch.rand((s["T"], g), device=dev, generator=gen).argsort(dim=1)[:, :topk]
    return torch.where(picks < e, picks, -1).to(torch.int32)


def moe_layout(indices, e, pad):
    """The plain-torch permute layout: a stable argsort of the routes' experts
    (unrouted last), counts by bincount, each expert padded to a multiple of
    pad. Returns (order, dest, counts, ends): the routes in permuted order,
    each one's row (capacity, an extra row, for an unrouted one), and per
    expert the routed count and padded end. No host sync."""
    t, topk = indices.shape
    flat = indices.reshape(-1).long()
    key = torch.where(flat >= 0, flat, e)
    order = torch.sort(key, stable=True).indices
    counts = torch.bincount(key, minlength=e + 1)[:e]
    padded = (counts + pad - 1) // pad * pad
    ends = torch.cumsum(padded, 0)
    first = torch.cumsum(counts, 0) - counts  # each expert's first place in order
    ks = key[order]
    cap = t * topk + e * (pad - 1)
    ksafe = ks.clamp(max=e - 1)
    dest = torch.where(ks < e, (ends - padded)[ksafe] + torch.arange(ks.numel(), device=ks.device) - first[ksafe], cap)
    return order, dest, counts, ends


def moe_peer(job):
    """moe_permute: moe_layout, then index_select of the tokens' rows into a
    zeroed capacity, then the cast of that (rowwise or tensorwise); moe_unpermute and
    moe_permute_bwd: index_select of each route's row, weighted, summed over k."""
    op, s, o = job["op"], job["sizes"], job["options"]
    e, pad, topk, h = s["E"], s["PAD"], s["TOPK"], s["H"]
    cap = moe_capacity(s)
    if op == "moe_permute":
        how = o["quant"]
        quantize = quantizer(job) if how != "none" else None

        def moe_permute(x, indices, *probs):
            order, dest, counts, ends = moe_layout(indices, e, pad)
            out = x.new_zeros((cap + 1, h))
            out.index_copy_(0, dest, x.index_select(0, order // topk))
            row_map = torch.full((indices.numel() + 1,), -1, dtype=torch.long, device=x.device)
            row_map.index_copy_(0, torch.where(dest < cap, order, indices.numel()), torch.where(dest < cap, dest, -1))
            # tensorwise: the capacity's amax is the routed rows' (the rest are zeros)
            res = list(quantize(out[:cap].float(), how)) if quantize else [out[:cap]]
            if probs:
                p = probs[0].new_zeros(cap + 1)
                p.index_copy_(0, dest, probs[0].reshape(-1)[order])
                res.append(p[:cap])
            return tuple(res) + (row_map[:-1].view(indices.shape).int(), ends.int(), counts.int())

        return Peer(moe_permute, compile_it(moe_permute),
                    note="stable argsort of the experts, index_select into a zeroed capacity, then the cast's peer")

    if op == "moe_unpermute_bwd":
        how = o["quant"]
        quantize = quantizer(job) if how != "none" else None

        def moe_unpermute_bwd(dy, row_map, *rest):
            rm = row_map.long()
            valid = rm >= 0
            w = valid.float()
            if len(rest) == 4:
                w = w * rest[0]
            g = dy.float()[:, None, :] * w[..., None]
            d = dy.new_zeros((cap + 1, h), dtype=torch.float32)
            d.index_copy_(0, torch.where(valid, rm, cap).reshape(-1), g.reshape(-1, h))
            res = list(quantize(d[:cap], how)) if quantize else [d[:cap].to(torch.bfloat16)]
            if len(rest) == 4:
                eo = rest[1].index_select(0, rm.clamp(min=0).reshape(-1)).view(rm.shape[0], topk, h).float()
                res.append((dy.float()[:, None, :] * eo).sum(dim=-1) * valid)
            return tuple(res)

        return Peer(moe_unpermute_bwd, compile_it(moe_unpermute_bwd),
                    note="probs · dy index_copy'd to each route's row of a zeroed capacity, then the cast's peer")

    def moe_unpermute(rows, row_map, *probs):
        rm = row_map.long()
        got = rows.index_select(0, rm.clamp(min=0).reshape(-1)).view(rm.shape[0], topk, h).float()
        w = (rm >= 0).float()
        if probs:
            w = w * probs[0]
        return ((got * w[..., None]).sum(dim=1).to(torch.bfloat16),)

    return Peer(moe_unpermute, compile_it(moe_unpermute))


def make_peer(job):
    op = job["op"]
    if op.startswith("moe_"):
        return moe_peer(job)
    if op == "swiglu_probs":
        fwd = swiglu_forward(job)
        return Peer(fwd, compile_it(fwd))
    if op == "swiglu_probs_bwd":
        return Peer(swiglu_train_step(job),
                    lambda mode: swiglu_train_step(job, lambda fn: torch.compile(fn, mode=mode, dynamic=False)),
                    note="forward and backward (torch.autograd.grad)",
                    compile_note="forward and backward: silu · up · probs under torch.compile (its backward compiled "
                                 "by AOTAutograd), torch.autograd.grad and the quantization outside it")
    if op == "qk_norm_rope":
        fwd = qk_forward(job, job["options"]["round_norm"] == "true")
        return Peer(fwd, compile_it(fwd))
    if op == "qk_norm_rope_bwd":
        fwd = qk_forward(job, False)
        dx = job["options"]["dx"]
        return Peer(qk_train_step(fwd, dx),
                    lambda mode: qk_train_step(torch.compile(fwd, mode=mode, dynamic=False), dx),
                    note="forward and backward (torch.autograd.grad)",
                    compile_note="forward and backward: the forward under torch.compile (its backward compiled "
                                 "by AOTAutograd), torch.autograd.grad outside it")
    if op == "swiglu_probs_mx":
        return swiglu_mx_peer(job)
    if op == "mx_cast":
        return mx_peer(job)
    if op == "grouped_mx_cast":
        return grouped_mx_peer(job)
    if op == "block_cast":
        return block_peer(job)
    return cast_peer(job)


def make_inputs(job, dev):
    """The job's input set (a tuple in call order), deterministic from job_seed."""
    seed = job_seed(job)
    gen = torch.Generator(device=dev).manual_seed(seed)
    rng = random.Random(seed)

    def randn(shape):
        return torch.randn(shape, device=dev, generator=gen, dtype=torch.float32)

    s, o = job["sizes"], job["options"]
    routes = []

    def routed():  # one routing for every tensor made from it
        if not routes:
            routes.append(moe_routing(job, dev, gen))
        return routes[0]

    out = []
    for name, shape, dtype in input_specs(job):
        dt = getattr(torch, dtype)
        if name in ("x", "w"):
            t = (randn(shape) * 3).to(dt)
        elif name in ("offsets", "counts") and job["op"].startswith("moe_"):
            _, _, counts, ends = moe_layout(routed(), s["E"], s["PAD"])
            t = (ends if name == "offsets" else counts).to(dt)
        elif name == "offsets":
            ends = cumulative(group_sizes(s["T"], s["E"], rng))
            t = torch.tensor(ends, dtype=torch.int32, device=dev)
        elif name in ("q_weight", "k_weight"):
            t = (1 + 0.1 * randn(shape)).to(dt)
        elif name == "inv_freq":
            d = s["D"]
            k = torch.arange(d // 2, dtype=torch.float64, device=dev)
            t = torch.pow(10000.0, -2.0 * k / d).to(dt)
        elif name == "indices":
            t = routed()
        elif name == "row_map":
            idx = routed()
            order, dest, _, _ = moe_layout(idx, s["E"], s["PAD"])
            rm = torch.full((idx.numel() + 1,), -1, dtype=torch.long, device=dev)
            cap = moe_capacity(s)
            rm.index_copy_(0, torch.where(dest < cap, order, idx.numel()), torch.where(dest < cap, dest, -1))
            t = rm[:-1].view(idx.shape).to(dt)
        elif name in ("expert_out", "d_perm"):
            t = randn(shape).to(dt)
        elif name == "probs":
            t = torch.rand(shape, device=dev, generator=gen, dtype=torch.float32).to(dt)
        elif name == "dy" and dtype.startswith("float8"):
            t = randn(shape).mul(64).clamp(-240, 240).to(dt)
        elif name == "dy_inv_scale":
            t = (1 + torch.rand(shape, device=dev, generator=gen, dtype=torch.float32)) / 1024
        elif name in ("cos", "sin"):
            d = s["D"]
            i = torch.tensor(rope_pair_index(d, o["rope"]), dtype=torch.float64, device=dev)
            pos = torch.arange(s["S"], dtype=torch.float64, device=dev)
            ang = pos[:, None] * torch.pow(10000.0, -2.0 * i / d)[None, :]
            t = (ang.cos() if name == "cos" else ang.sin()).to(dt)
        else:  # qkv, dq, dk, dv
            t = randn(shape).to(dt)
        out.append(t.contiguous())
    return tuple(out)


def input_copies(base, l2):
    """base and enough clones of the whole set that cycling through them exceeds twice the L2."""
    nbytes = sum(t.numel() * t.element_size() for t in base)
    n = n_copies(nbytes, l2)
    return [base] + [tuple(t.clone() for t in base) for _ in range(n - 1)]


# ---- timing ----


def median_us(fn, arg_sets, rep_ms):
    """Median time of one fn(*args) in microseconds, args cycling through arg_sets."""
    call = cycling(fn, arg_sets)
    if do_bench is not None:
        return 1000.0 * do_bench(call, warmup=25, rep=rep_ms, return_mode="median")
    return 1000.0 * event_median_ms(call, rep_ms)


FLUSH_BYTES = 256_000_000  # as triton's do_bench, and fp8gen's bench (backend.FlushBytes)


def event_median_ms(call, rep_ms, warmup_ms=25):
    """Median of per-launch CUDA event times, after a warm-up, each launch
    after FLUSH_BYTES of zeros are written (the L2 flushed as do_bench and
    fp8gen's bench flush it)."""
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        call()
    end.record()
    torch.cuda.synchronize()
    est_ms = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / est_ms))):
        call()
    n = max(10, int(rep_ms / est_ms))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in events:
        flush.zero_()
        s.record()
        call()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def compare(names, a, b):
    """Outputs a (eager) against b (compiled): differing elements by bits, and the largest difference."""
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    parts = []
    for name, x, y in zip(names, a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            parts.append(f"{name} {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}")
            continue
        xb = x.reshape(-1).view(bits[x.element_size()])
        yb = y.reshape(-1).view(bits[y.element_size()])
        bad = (xb != yb).sum().item()
        diff = (x.float() - y.float()).abs().max().item() if x.numel() else 0.0
        parts.append(f"{name} {bad}/{x.numel()} differ (max abs diff {diff:.3g})")
    return "; ".join(parts)


# ---- the run ----


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", help="JSON list of jobs (see above)")
    ap.add_argument("--out", default="peers.json", help="JSON rows, rewritten after every row")
    ap.add_argument("--compile-modes", "--compile-mode", dest="compile_modes", default=DEFAULT_MODES,
                    help=f"torch.compile modes, comma-separated, '' for none (default {DEFAULT_MODES})")
    ap.add_argument("--rep-ms", type=float, default=200, help="timing budget per measurement (default 200 ms)")
    ap.add_argument("--check", action="store_true", help="also compare compiled outputs with eager's, bit for bit")
    ap.add_argument("--ops", help="legacy: casts to time at --shapes, default options (no --jobs)")
    ap.add_argument("--shapes", help="legacy: MxK,... (default 8192x8192,16384x8192)")
    ap.add_argument("--fp8", help="legacy: the torch FP8 format (default e4m3fn)")
    return ap


def plan(argv):
    """Arguments -> (args, jobs, modes), or exit 2 with the reason; touches no GPU."""
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        if args.rep_ms <= 0:
            raise JobError(f"--rep-ms {args.rep_ms:g}: want a positive time")
        modes = parse_modes(args.compile_modes)
        if args.jobs is not None:
            legacy = [f for f in ("ops", "shapes", "fp8") if getattr(args, f) is not None]
            if legacy:
                raise JobError(f"--jobs takes no --{', --'.join(legacy)}: the jobs say it all")
            jobs = load_jobs(args.jobs)
        else:
            jobs = legacy_jobs(args.ops or ",".join(LEGACY_OPS), args.shapes or "8192x8192,16384x8192",
                               args.fp8 or "e4m3fn")
    except JobError as e:
        ap.error(str(e))
    return args, jobs, modes


def main(argv=None):
    global torch, do_bench
    args, jobs, modes = plan(argv)
    if not jobs:
        write_json(args.out, [])
        log(f"peers.py: no jobs; wrote 0 rows to {args.out}")
        return
    try:
        import torch as _torch
    except ImportError as e:
        sys.exit(f"peers.py: torch does not import: {e}")
    torch = _torch
    try:
        from triton.testing import do_bench as _do_bench
        do_bench = _do_bench
    except Exception:  # noqa: BLE001 -- no (working) triton: time with our own CUDA event loop
        do_bench = None
    if not torch.cuda.is_available():
        sys.exit("peers.py: no CUDA device visible to torch")

    dev = torch.device("cuda")
    l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or L2_BYTES
    common = {
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "torch": torch.__version__,
    }
    log(f"peers.py: {common['gpu']}, torch {common['torch']}, {len(jobs)} jobs, compile modes "
        f"{', '.join(modes) or 'none'}, L2 {l2 / 2**20:.0f} MiB, "
        f"timing with {'triton do_bench' if do_bench else 'CUDA events'}")

    copy_us = {}  # bytes each side -> copy time
    rows = []

    def add(job, impl, time_us, nbytes, copy_gbps, **extra):
        r = make_row(job, impl, time_us, nbytes, copy_gbps, common, **extra)
        rows.append(r)
        write_json(args.out, rows)  # after every row, so a crash keeps what was measured
        log(row_line(r))
        return r

    def copy_time(n):
        if n not in copy_us:
            src = torch.randint(0, 256, (n,), dtype=torch.uint8, device=dev)
            srcs = input_copies((src,), l2)  # argument tuples (src,), cloned
            dst = torch.empty_like(src)
            copy_us[n] = median_us(dst.copy_, srcs, args.rep_ms)
            del src, srcs, dst
        return copy_us[n]

    for job in jobs:
        nbytes = job["ideal_bytes"]
        opts = ",".join(f"{k}={v}" for k, v in job["options"].items())
        log(f"{job['op']} {job['shape']} ({opts}{', fp8 ' + job['fp8'] if job['fp8'] else ''}): "
            f"{nbytes} ideal bytes")
        if job["unsupported"]:
            log(f"  not timed: {job['unsupported']}")
            for impl, mode in [("eager", None)] + [(COMPILE_MODES[m], m) for m in modes]:
                add(job, impl, None, nbytes, None, error=job["unsupported"], compile_mode=mode)
            continue
        ours = peer_bytes(job)
        if ours != nbytes:
            log(f"  note: peers.py counts {ours} bytes for this job's tensors; using fp8gen's {nbytes}")

        copy_gbps = None
        n = copy_size(nbytes)
        try:
            t = copy_time(n)
            copy_gbps = 2 * n / t / 1e3
            add(job, "copy", t, 2 * n, copy_gbps)
        except Exception as e:  # noqa: BLE001 -- record and go on
            add(job, "copy", None, 2 * n, None, error=short_error(e))

        specs = output_specs(job)
        names = [s[0] for s in specs]
        try:
            peer = make_peer(job)
            arg_sets = input_copies(make_inputs(job, dev), l2)
        except Exception as e:  # noqa: BLE001 -- no inputs: every impl fails alike
            traceback.print_exc(limit=3)
            msg = "inputs: " + short_error(e)
            add(job, "eager", None, nbytes, None, error=msg)
            for mode in modes:
                add(job, COMPILE_MODES[mode], None, nbytes, None, error=msg, compile_mode=mode)
            torch.cuda.empty_cache()
            continue

        outs = None
        try:
            outs = peer.eager(*arg_sets[0])
            torch.cuda.synchronize()
            bad = verify_outputs(outs, specs)
            if bad:
                raise RuntimeError(f"eager outputs: {bad}")
            outs = None
            add(job, "eager", median_us(peer.eager, arg_sets, args.rep_ms), nbytes, copy_gbps, note=peer.note)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(limit=3)
            outs = None
            add(job, "eager", None, nbytes, None, error=short_error(e), note=peer.note)

        for mode in modes:
            extra = {"compile_mode": mode, "note": peer.compile_note}
            compiled = None
            try:
                torch._dynamo.reset()  # a fresh compile for each job and mode
                compiled = peer.compile(mode)
                outs = compiled(*arg_sets[0])  # compile now, so that a failure is caught here
                torch.cuda.synchronize()
                bad = verify_outputs(outs, specs)
                if bad:
                    raise RuntimeError(f"compiled outputs: {bad}")
                if args.check:
                    try:
                        extra["check"] = compare(names, peer.eager(*arg_sets[0]), outs)
                    except Exception as e:  # noqa: BLE001 -- a failed check is no failed time
                        extra["check"] = "check failed: " + short_error(e)
                    log(f"  check     {extra['check']}")
                outs = None
                add(job, COMPILE_MODES[mode], median_us(compiled, arg_sets, args.rep_ms), nbytes, copy_gbps,
                    **extra)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(limit=3)
                outs = None
                add(job, COMPILE_MODES[mode], None, nbytes, None, error=short_error(e), **extra)
            compiled = None
        del arg_sets, peer
        torch._dynamo.reset()
        torch.cuda.empty_cache()

    log("")
    for line in format_table(rows):
        log(line)
    if args.check:
        log("")
        for r in rows:
            if r.get("compile_mode"):
                log(f"check {r['op']} {r['shape']} {r['impl']}: {r.get('check') or r.get('error')}")
    log(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
