#!/usr/bin/env python3
"""Time the PyTorch peers of fp8gen's FP8 quantization kernels on the GPU.

For each op and shape (M x K, a bf16 input of normal random data times 3,
made afresh for each shape) this times

  eager     the plain chain of PyTorch ops a user would write (OPS below),
  compiled  torch.compile of the same Python function,
  copy      dst.copy_(src) of a uint8 buffer, moving the same bytes as the
            op ideally moves: the memory-bandwidth ceiling for the shape,

and writes a JSON list of rows (the form of fp8gen's Go package bench):
op, shape, impl, time_us, bytes, gb_per_s, pct_copy, gpu, date, torch, ...

Ideal bytes of an op: x read once (2*M*K) + fp8 output written once (M*K)
+ fp32 inverse scales (4*M, 4*K or 4). gb_per_s = bytes / time, and
pct_copy = 100 * gb_per_s / the copy's gb_per_s for the same byte count.

  python3 bench/peers.py --ops rowwise_cast,tensorwise_cast,colwise_cast \\
      --shapes 8192x8192,16384x8192 --fp8 e4m3fn --out peers.json [--check]
"""

import argparse
import datetime
import itertools
import json
import math
import os
import statistics
import sys
import traceback

import torch

try:
    from triton.testing import do_bench
except ImportError:  # no triton: time with our own CUDA event loop
    do_bench = None

EPS = 1e-12  # amax floor, so an all-zero row gets a finite scale
L2_BYTES = 50 * 2**20  # H200 L2; inputs are rotated to exceed twice this
MAX_COPIES = 64

FP8_DTYPES = {
    "e4m3fn": torch.float8_e4m3fn,
    "e4m3fnuz": torch.float8_e4m3fnuz,
    "e5m2": torch.float8_e5m2,
    "e5m2fnuz": torch.float8_e5m2fnuz,
}


def log(*args):
    print(*args, flush=True)


# ---- the ops: what a user writes in PyTorch, fp32 math ----


def make_ops(fp8, fmax):
    """Return {op name: function of x}, each returning (fp8 output, inv_scale)."""

    def rowwise_cast(x):
        xf = x.float()
        amax = xf.abs().amax(dim=1)
        scale = fmax / amax.clamp(min=EPS)
        q = (xf * scale[:, None]).clamp(-fmax, fmax).to(fp8)
        return q, 1.0 / scale

    def tensorwise_cast(x):
        xf = x.float()
        amax = xf.abs().amax()
        scale = fmax / amax.clamp(min=EPS)
        q = (xf * scale).clamp(-fmax, fmax).to(fp8)
        return q, 1.0 / scale

    def colwise_cast(x):
        xf = x.float()
        amax = xf.abs().amax(dim=0)
        scale = fmax / amax.clamp(min=EPS)
        qt = (xf * scale[None, :]).clamp(-fmax, fmax).to(fp8).t().contiguous()
        return qt, 1.0 / scale

    return {f.__name__: f for f in (rowwise_cast, tensorwise_cast, colwise_cast)}


def ideal_bytes(op, m, k):
    """x read once (bf16), the fp8 output written once, the fp32 scales."""
    scales = {"rowwise_cast": 4 * m, "tensorwise_cast": 4, "colwise_cast": 4 * k}[op]
    return 2 * m * k + m * k + scales


# ---- timing ----


def copies_of(t):
    """t and enough clones of it that cycling through them exceeds the L2."""
    n = min(MAX_COPIES, max(1, math.ceil(2 * L2_BYTES / (t.numel() * t.element_size()))))
    return [t] + [t.clone() for _ in range(n - 1)]


def median_us(fn, args, rep_ms):
    """Median time of one fn(a) in microseconds, a cycling through args."""
    it = itertools.cycle(args)

    def call():
        return fn(next(it))

    if do_bench is not None:
        return 1000.0 * do_bench(call, warmup=25, rep=rep_ms, return_mode="median")
    return 1000.0 * event_median_ms(call, rep_ms)


def event_median_ms(call, rep_ms, warmup_ms=25):
    """Median of per-launch CUDA event times, after a warm-up."""
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
        s.record()
        call()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


# ---- the run ----


def parse_shape(s):
    try:
        m, k = (int(d) for d in s.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {s!r} is not MxK, e.g. 8192x8192")
    if m <= 0 or k <= 0:
        raise argparse.ArgumentTypeError(f"shape {s!r} has a non-positive size")
    return m, k


def short_error(e):
    """The first line of an exception and its last informative one."""
    boilerplate = ("Set TORCHDYNAMO_VERBOSE", "For even more developer context", "You can suppress")
    lines = [ln.strip() for ln in f"{type(e).__name__}: {e}".splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(boilerplate)]
    lines = [ln.split(" Set TORCHDYNAMO_VERBOSE")[0] for ln in lines] or [type(e).__name__]
    msg = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return msg[:500]


def check(eager, compiled, x):
    """Compare eager and compiled outputs bit for bit; return a summary."""
    qe, se = eager(x)
    qc, sc = compiled(x)
    torch.cuda.synchronize()
    if qe.shape != qc.shape or se.shape != sc.shape:
        return f"shape mismatch: q {tuple(qe.shape)} vs {tuple(qc.shape)}, scale {tuple(se.shape)} vs {tuple(sc.shape)}"
    q_bad = (qe.view(torch.uint8) != qc.view(torch.uint8)).sum().item()
    s_bad = (se.view(torch.int32) != sc.view(torch.int32)).sum().item()
    s_rel = ((se - sc).abs() / se.abs()).max().item()
    return f"q bytes differing {q_bad}/{qe.numel()}, scales differing {s_bad}/{se.numel()} (max rel diff {s_rel:.3g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="rowwise_cast,tensorwise_cast,colwise_cast")
    ap.add_argument("--shapes", default="8192x8192,16384x8192")
    ap.add_argument("--fp8", default="e4m3fn", choices=sorted(FP8_DTYPES))
    ap.add_argument("--compile-mode", default="default", choices=["default", "max-autotune-no-cudagraphs"])
    ap.add_argument("--rep-ms", type=float, default=200, help="timing budget per measurement (default 200 ms)")
    ap.add_argument("--check", action="store_true", help="also compare eager and compiled outputs bit for bit")
    ap.add_argument("--out", default="peers.json")
    args = ap.parse_args()

    fp8 = FP8_DTYPES[args.fp8]
    fmax = float(torch.finfo(fp8).max)
    ops = make_ops(fp8, fmax)
    names = [s for s in args.ops.split(",") if s]
    for name in names:
        if name not in ops:
            ap.error(f"unknown op {name!r}: known are {', '.join(ops)}")
    try:
        shapes = [parse_shape(s) for s in args.shapes.split(",") if s]
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    if not torch.cuda.is_available():
        sys.exit("peers.py: no CUDA device visible to torch")

    dev = torch.device("cuda")
    common = {
        "gpu": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "torch": torch.__version__,
        "fp8": args.fp8,
    }
    log(f"peers.py: {common['gpu']}, torch {common['torch']}, fp8 {args.fp8} (max {fmax:g}), "
        f"compile mode {args.compile_mode}, timing with {'triton do_bench' if do_bench else 'CUDA events'}")

    inputs = {}  # (m, k) -> list of bf16 input copies, the same for every op
    copy_us = {}  # byte count -> copy time
    rows = []

    def get_inputs(m, k):
        if (m, k) not in inputs:
            g = torch.Generator(device=dev).manual_seed(m * 1_000_003 + k)
            x = (torch.randn(m, k, device=dev, generator=g) * 3).to(torch.bfloat16)
            inputs[(m, k)] = copies_of(x)
        return inputs[(m, k)]

    def copy_time(nbytes):
        n = (nbytes + 1) // 2  # copy_ reads n and writes n bytes
        if n not in copy_us:
            srcs = copies_of(torch.randint(0, 256, (n,), dtype=torch.uint8, device=dev))
            dst = torch.empty_like(srcs[0])
            copy_us[n] = median_us(dst.copy_, srcs, args.rep_ms)
            del srcs, dst
        return copy_us[n], 2 * n

    def row(op, shape, impl, time_us, nbytes, copy_gbps, **extra):
        r = {"op": op, "shape": shape, "impl": impl, "time_us": None, "bytes": nbytes,
             "gb_per_s": None, "pct_copy": None, **common, **extra}
        if time_us:
            r["time_us"] = time_us
            r["gb_per_s"] = nbytes / time_us / 1e3
            if copy_gbps:
                r["pct_copy"] = 100 * r["gb_per_s"] / copy_gbps
        rows.append(r)
        write_json(args.out, rows)  # after every row, so a crash keeps what was measured
        err = f"  ERROR {r['error']}" if r.get("error") else ""
        log(f"  {impl:9s} {fmt(r['time_us'], '10.1f')} us  {fmt(r['gb_per_s'], '7.0f')} GB/s  "
            f"{fmt(r['pct_copy'], '5.1f')}% copy{err}")
        return r

    for name in names:
        for m, k in shapes:
            shape = f"{m}x{k}"
            nbytes = ideal_bytes(name, m, k)
            log(f"{name} {shape}: {nbytes} ideal bytes")
            xs = get_inputs(m, k)

            copy_gbps = None
            try:
                t, copied = copy_time(nbytes)
                copy_gbps = copied / t / 1e3
                row(name, shape, "copy", t, copied, copy_gbps)
            except Exception as e:  # noqa: BLE001 -- record and go on
                row(name, shape, "copy", None, 2 * ((nbytes + 1) // 2), None, error=short_error(e))

            eager = ops[name]
            try:
                row(name, shape, "eager", median_us(eager, xs, args.rep_ms), nbytes, copy_gbps)
            except Exception as e:  # noqa: BLE001
                row(name, shape, "eager", None, nbytes, None, error=short_error(e))

            extra = {"compile_mode": args.compile_mode}
            try:
                # A fresh compile for each shape, specialized to it (no
                # dynamic shapes, which would be slower and not what the
                # peer of a shape-specialized kernel is).
                torch._dynamo.reset()
                compiled = torch.compile(eager, mode=args.compile_mode, dynamic=False)
                compiled(xs[0])  # compile now, so that a failure is caught here
                torch.cuda.synchronize()
                if args.check:
                    extra["check"] = check(eager, compiled, xs[0])
                    log(f"  check     {extra['check']}")
                row(name, shape, "compiled", median_us(compiled, xs, args.rep_ms), nbytes, copy_gbps, **extra)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc(limit=3)
                row(name, shape, "compiled", None, nbytes, None, error=short_error(e), **extra)
            torch.cuda.empty_cache()

    log("")
    log(f"{'op':16s} {'shape':11s} {'impl':9s} {'time us':>10s} {'GB/s':>7s} {'% copy':>7s}")
    for r in rows:
        log(f"{r['op']:16s} {r['shape']:11s} {r['impl']:9s} {fmt(r['time_us'], '10.1f')} "
            f"{fmt(r['gb_per_s'], '7.0f')} {fmt(r['pct_copy'], '7.1f')}" + ("  error" if r.get("error") else ""))
    if args.check:
        log("")
        for r in rows:
            if r["impl"] == "compiled":
                log(f"check {r['op']:16s} {r['shape']:11s} {r.get('check') or r.get('error')}")
    log(f"wrote {len(rows)} rows to {args.out}")


def fmt(v, spec):
    if v is None:
        return format("-", ">" + spec.split(".")[0])
    return format(v, spec)


def write_json(path, rows):
    """Write rows atomically: a temporary file in the same directory, renamed."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(rows, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
