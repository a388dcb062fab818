#!/usr/bin/env python3
"""Host time per call of fp8gen_torch ops, against plain torch.

    python3 python/bench_host.py --out host.json --commit abc123 EXPORT_DIR...

Each EXPORT_DIR is an fp8gen export (fp8gen export OP --target T -o DIR),
or a folder whose subfolders are exports. Every export runs at its own
shape (the manifest's), through the loader's eager path and through its
registered operator (torch.ops.fp8gen.*, the dispatcher's path). Beside
them: a plain torch op (x.abs()), and a torchao-style rowwise FP8 cast in
plain torch, eagerly and under torch.compile(fullgraph=True), on a bf16
tensor of rowwise_cast's shape (4096 x 4096 without one).

What is measured is the CPU's time per call, not the GPU's: before each
batch of calls the stream is given a long kernel (torch.cuda._sleep), so
that every call of the batch only queues work and none waits for the GPU
(the report says whether the sleep outlasted every batch). Each call is
timed alone with time.perf_counter; the report gives the median and the
10th and 90th percentiles in microseconds, over --repeats batches of
--calls calls, after warm-up calls (plans made, modules loaded, graphs
compiled). The garbage collector is off while a batch runs. Exports with
a status word run with check_status=False (reading it would wait for the
GPU).

Writes a JSON object to --out: gpu, torch, cuda, date, commit, cpu, rows
[{op, path, kernels, shape, host_us_median, host_us_p10, host_us_p90,
calls}], gpu_busy_throughout, sleep_ms; and prints a table.
"""

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("exports", nargs="+", help="export folders (or folders of export folders)")
    p.add_argument("--out", required=True, help="the JSON report to write")
    p.add_argument("--commit", default="unknown", help="the fp8gen commit the exports and the loader are from")
    # A batch's launches queue behind the sleep: kept well below the
    # driver's queue depth (about a thousand), past which a launch blocks.
    p.add_argument("--calls", type=int, default=100, help="calls per batch (default 100)")
    p.add_argument("--repeats", type=int, default=20, help="batches per row (default 20)")
    p.add_argument("--warmup", type=int, default=20, help="untimed calls first (default 20)")
    return p.parse_args(argv)


def export_folders(paths):
    out = []
    for p in paths:
        if os.path.exists(os.path.join(p, "manifest.json")):
            out.append(p)
            continue
        subs = sorted(e.path for e in os.scandir(p) if e.is_dir() and os.path.exists(os.path.join(e.path, "manifest.json")))
        if not subs:
            raise SystemExit("%s: no manifest.json, and no subfolder holding one" % p)
        out.extend(subs)
    return out


def percentile(sorted_vals, q):
    if not sorted_vals:
        return float("nan")
    i = (len(sorted_vals) - 1) * q
    lo, hi = int(i), min(int(i) + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (i - lo)


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        raise SystemExit("bench_host.py needs torch")
    if not torch.cuda.is_available():
        raise SystemExit("torch %s sees no GPU" % torch.__version__)
    from fp8gen_torch import load

    dev = torch.device("cuda", torch.cuda.current_device())
    stream = torch.cuda.current_stream()

    # --- the sleep that keeps the GPU busy through a batch ---------------
    def sleep_cycles_per_ms():
        torch.cuda._sleep(1000)  # warm
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        n = 10_000_000
        a.record()
        torch.cuda._sleep(n)
        b.record()
        b.synchronize()
        return n / max(a.elapsed_time(b), 1e-3)

    per_ms = sleep_cycles_per_ms()
    state = {"sleep_ms": 50.0, "busy": True}

    def measure(fn):
        for _ in range(args.warmup):
            fn()
        torch.cuda.synchronize()
        for attempt in range(4):
            times, busy = [], True
            for _ in range(args.repeats):
                torch.cuda.synchronize()
                torch.cuda._sleep(int(per_ms * state["sleep_ms"]))
                gc.disable()
                try:
                    clock = time.perf_counter
                    t0 = clock()
                    for _ in range(args.calls):
                        fn()
                        t1 = clock()
                        times.append(t1 - t0)
                        t0 = t1
                    # Still sleeping: no call of the batch waited for the GPU.
                    busy = busy and not stream.query()
                finally:
                    gc.enable()
            torch.cuda.synchronize()
            if busy:
                break
            state["sleep_ms"] *= 4  # the batch outlasted the sleep: again, longer
        state["busy"] = state["busy"] and busy
        us = sorted(t * 1e6 for t in times)
        return {"host_us_median": round(statistics.median(us), 3), "host_us_p10": round(percentile(us, 0.1), 3),
                "host_us_p90": round(percentile(us, 0.9), 3), "calls": len(us)}

    def count_kernels(fn):
        """Kernels one call launches, from the profiler (None where it
        cannot tell)."""
        try:
            from torch.profiler import ProfilerActivity, profile
            fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            n = 0
            for e in prof.events():
                dt = getattr(e, "device_type", None)
                if dt is not None and "CUDA" in str(dt) and not str(e.name).startswith(("Memset", "Memcpy", "cudaMemset")):
                    n += 1
            return n or None
        except Exception:  # noqa: BLE001 (a profiler without CUDA: the count is unknown)
            return None

    rows = []

    def row(op, path, kernels, shape, fn):
        r = {"op": op, "path": path, "kernels": kernels, "shape": shape}
        r.update(measure(fn))
        rows.append(r)
        print("  %-34s %-14s %-7s %-28s %8.2f us  (p10 %.2f, p90 %.2f)" % (
            op, path, kernels, shape, r["host_us_median"], r["host_us_p10"], r["host_us_p90"]), flush=True)

    print("host time per call on %s, torch %s" % (torch.cuda.get_device_name(dev), torch.__version__), flush=True)
    gen = torch.Generator(device=dev).manual_seed(1)
    rowwise_shape = None
    for folder in export_folders(args.exports):
        # No status read: it would wait for the GPU (and the sleep) each call.
        op = load(folder, check_status=False)
        m = op.manifest
        sizes = dict(m.shape)
        ins = []
        for t in m.inputs:
            dims = m.dims_at(t, sizes)
            dt = op.dtypes[t.name]
            if t.dtype in ("f32", "bf16"):
                ins.append(torch.randn(dims, generator=gen, device=dev).to(dt))
            elif t.name == "offsets":  # group ends, evenly spread over T
                e, total = dims[0], sizes["T"]
                ins.append(torch.tensor([total * (i + 1) // e for i in range(e)], dtype=dt, device=dev))
            else:
                ins.append(torch.zeros(dims, dtype=dt, device=dev))
        shape = ",".join("%s=%d" % (n, sizes[n]) for n in m.size_names)
        if m.op == "rowwise_cast":
            rowwise_shape = (sizes["M"], sizes["K"])
        xs = tuple(ins)
        row("fp8gen " + m.op, "direct", len(m.kernels), shape, lambda: op(*xs))
        overload, check = op._overload, op.check_status
        row("fp8gen " + m.op, "operator", len(m.kernels), shape, lambda: overload(*xs, check))

    mm, kk = rowwise_shape or (4096, 4096)
    x = torch.randn(mm, kk, generator=gen, device=dev).bfloat16()
    shape = "x[%d,%d] bf16" % (mm, kk)
    row("torch x.abs()", "torch", count_kernels(lambda: x.abs()), shape, lambda: x.abs())

    fp8 = getattr(torch, "float8_e4m3fn", None)
    if fp8 is not None:
        fmax = torch.finfo(fp8).max

        def rowwise_ref(t):
            # torchao-style: one scale per row from its amax, saturating cast.
            amax = t.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12)
            scale = fmax / amax
            q = (t.float() * scale).clamp(-fmax, fmax).to(fp8)
            return q, (1.0 / scale).squeeze(1)

        row("torch rowwise reference", "torch", count_kernels(lambda: rowwise_ref(x)), shape, lambda: rowwise_ref(x))
        compiled = torch.compile(rowwise_ref, fullgraph=True)
        compiled(x)
        row("torch rowwise reference", "torch.compile", count_kernels(lambda: compiled(x)), shape, lambda: compiled(x))

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    report = {
        "gpu": torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": args.commit,
        "cpu": cpu,
        "python": platform.python_version(),
        "method": "time.perf_counter around each call, in batches of %d after a %g ms GPU sleep; %d batches"
                  % (args.calls, state["sleep_ms"], args.repeats),
        "gpu_busy_throughout": state["busy"],
        "sleep_ms": state["sleep_ms"],
        "rows": rows,
    }
    d = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(d, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print("wrote %s%s" % (args.out, "" if state["busy"] else " (WARNING: some batch outlasted the GPU sleep)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
