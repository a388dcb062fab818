"""The call path without torch or a GPU: plans, their cache, the packed
kernel arguments and the scratch memsets, run on stand-ins for tensors and
for the driver (fp8gen_torch.plan's Runtime).

Every export under $FP8GEN_EXPORTS (default /work/exports-sample) is also
run through it at its own shape; the synthetic manifests below need none,
and the tests of real ops' manifests fall back on the sm_90 manifests in
tests/data (fp8gen export at the ops' example shapes) where it holds none.
"""

import ctypes
import glob
import json
import os
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fp8gen_torch import manifest as mf  # noqa: E402
from fp8gen_torch import plan as pl  # noqa: E402
from fp8gen_torch.manifest import ShapeError  # noqa: E402

EXPORTS = os.environ.get("FP8GEN_EXPORTS", "/work/exports-sample")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


# ---------------------------------------------------------------------------
# Stand-ins


class DType:
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __repr__(self):
        return "fake." + self.name


DTYPES = {n: DType(n, mf.DTYPE_BYTES[n]) for n in mf.DTYPES}
U8 = DType("u8", 1)


class Device:
    def __init__(self, type_, index):
        self.type, self.index = type_, index

    def __eq__(self, o):
        return isinstance(o, Device) and (self.type, self.index) == (o.type, o.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return "%s:%s" % (self.type, self.index)


class Tensor:
    _next = [0x7F0000000000]

    def __init__(self, shape, dtype, device, contiguous=True):
        self.shape, self.dtype, self.device, self._contig = tuple(shape), dtype, device, contiguous
        self.is_cuda = device.type == "cuda"
        n = 1
        for d in self.shape:
            n *= d
        self.nbytes = n * dtype.itemsize
        self._ptr = Tensor._next[0]
        Tensor._next[0] += -(-max(self.nbytes, 1) // 512) * 512 + 512

    def data_ptr(self):
        return self._ptr

    def is_contiguous(self):
        return self._contig

    def get_device(self):
        return self.device.index if self.is_cuda else -1

    def dim(self):
        return len(self.shape)

    def stride(self):
        return (1,) * len(self.shape)


class Subclass(Tensor):
    pass


class FakeRuntime(pl.Runtime):
    """Records every memset and launch, with the argument bytes the driver
    would copy at that moment."""

    plain_types = frozenset([Tensor])
    tensor_type = Tensor
    u8 = U8
    retry_codes = (201,)

    def __init__(self, m, current=0):
        self.m = m
        self.current = current
        self.calls = []  # ("memset", width, addr, value, count) / ("launch", symbol, grid, block, shm, stream, bytes)
        self.loads = 0
        self.entered = []
        self.guarded = []
        self.fail = []  # return codes the next driver calls return
        self.words = {}
        self.launch = self._launch
        self.memsets = {w: self._memset(w) for w in (1, 2, 4)}
        self.by_fn = {}

    def empty(self, dims, dtype=None, device=None):
        return Tensor(dims, dtype, device)

    def device(self, index):
        return Device("cuda", index)

    def current_device(self):
        return self.current

    def raw_stream(self, index):
        return 0x5000 + index

    def functions(self, index):
        self.loads += 1
        fns = [ctypes.c_void_p(0x1000 * (index + 1) + i) for i in range(len(self.m.kernels))]
        for f, k in zip(fns, self.m.kernels):
            self.by_fn[f.value] = k
        return fns

    def _code(self):
        return self.fail.pop(0) if self.fail else 0

    def _memset(self, width):
        def f(addr, value, count, stream):
            rc = self._code()
            if not rc:
                self.calls.append(("memset", width, addr, value, count, stream))
            return rc
        return f

    def _launch(self, fn, gx, gy, gz, bx, by, bz, shm, stream, params, extra):
        rc = self._code()
        if rc:
            return rc
        k = self.by_fn[fn.value]
        self.calls.append(("launch", k.symbol, (gx, gy, gz), (bx, by, bz), shm, stream, pl.param_bytes(k, params)))
        return 0

    def enter(self, index):
        self.entered.append(index)
        return ("prev", index)

    def leave(self, prev):
        self.entered.append(("leave", prev))

    def guard(self, index):
        rt = self

        class G:
            def __enter__(self):
                rt.guarded.append(index)

            def __exit__(self, *a):
                return False
        return G()

    def check(self, rc, what):
        if rc:
            raise RuntimeError("driver %d: %s" % (rc, what))

    def fill(self, scratch, off, nbytes, tensor):
        self.calls.append(("fill", scratch.data_ptr() + off, nbytes, tensor.name, tensor.init))

    def read_words(self, scratch, off, nbytes, dtype):
        return self.words.get(off, [0] * (nbytes // dtype.itemsize))


def launcher(m, rt=None, **kw):
    rt = rt or FakeRuntime(m)
    return pl.Launcher(m, {t.name: DTYPES[t.dtype] for t in m.tensors}, rt, **kw), rt


def inputs_at(m, sizes, index=0):
    dev = Device("cuda", index)
    return [Tensor(m.dims_at(t, sizes), DTYPES[t.dtype], dev) for t in m.inputs]


def expected_args(m, k, sizes, ptrs):
    """The bytes the plain path (one ctypes object per argument) passes."""
    vals = pl.arg_values(k, sizes, ptrs)
    return pl.param_bytes(k, pl.pack_args(vals))


def toy(**over):
    """One size M, an input x f32[M], an output y f32[M], scratch as given."""
    data = {
        "fp8gen_manifest": 1, "op": "toy", "doc": "", "fp8": None, "options": {}, "schedule": {},
        "target": {"name": "sm_90", "vendor": "nvidia", "product": "H100/H200", "wave_size": 32},
        "index_bits": 32, "max_elements": 1 << 30, "shape": {"M": 16},
        "sizes": [{"name": "M", "multiple_of": 1}], "constraints": None,
        "tensors": [{"name": "x", "role": "input", "dtype": "f32", "shape": ["M"], "doc": ""},
                    {"name": "y", "role": "output", "dtype": "f32", "shape": ["M"], "doc": ""}],
        "source": {"file": "toy.cu", "sha256": "0" * 64}, "compile_flags": ["-O3"], "code_object": None,
        "kernels": [{"name": "k", "symbol": "k_0123abcd",
                     "params": [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"},
                                {"name": "M", "kind": "size", "dtype": "i32"}, {"name": "M", "kind": "size", "dtype": "i64"}],
                     "grid": ["cdiv(M, 4)", "1", "1"], "block": [128, 1, 1],
                     "dynamic_lds_bytes": 0, "static_lds_bytes": 0}],
    }
    data.update(over)
    return mf.parse(json.dumps(data))


def toy_scratch(*scratch):
    """toy with scratch tensors (name, dtype, shape, init[, status]), each
    passed to its kernel."""
    tensors = [{"name": "x", "role": "input", "dtype": "f32", "shape": ["M"], "doc": ""},
               {"name": "y", "role": "output", "dtype": "f32", "shape": ["M"], "doc": ""}]
    params = [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"}]
    for s in scratch:
        t = {"name": s[0], "role": "scratch", "dtype": s[1], "shape": s[2], "init": s[3], "doc": ""}
        if len(s) > 4:
            t["status"] = s[4]
        tensors.append(t)
        params.append({"name": s[0], "kind": "tensor"})
    k = {"name": "k", "symbol": "k_0123abcd", "params": params, "grid": ["M", "1", "1"], "block": [64, 1, 1],
         "dynamic_lds_bytes": 0, "static_lds_bytes": 0}
    k2 = dict(k, name="k2", symbol="k2_0123abcd", dependent_launch=True)
    return toy(tensors=tensors, kernels=[k, k2])


def real_manifest(op):
    """The manifest of an export of op under EXPORTS (its folder named op
    or op-…), else tests/data's sm_90 one."""
    d = [p for p in export_dirs() if os.path.basename(p) == op or os.path.basename(p).startswith(op + "-")]
    if d:
        return mf.load_manifest(d[0])
    with open(os.path.join(DATA, op + ".sm_90.json")) as f:
        return mf.parse(f.read())


def export_dirs():
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(EXPORTS, "**", "manifest.json"), recursive=True))


# ---------------------------------------------------------------------------


class ArgumentBytesTest(unittest.TestCase):
    def check_call(self, m, sizes=None):
        """One call at sizes: every launch's arguments are the plain path's
        bytes, its grid the manifest's; each scratch tensor is filled with
        its init before the first kernel."""
        sizes = dict(sizes or m.shape)
        ln, rt = launcher(m)
        xs = inputs_at(m, sizes)
        outs = ln.call(xs)
        checked = m.check(sizes)
        self.assertEqual([o.shape for o in outs], [checked.dims[t.name] for t in m.outputs])
        self.assertEqual([o.dtype for o in outs], [DTYPES[t.dtype] for t in m.outputs])
        launches = [c for c in rt.calls if c[0] == "launch"]
        self.assertEqual([c[1] for c in launches], [k.symbol for k in m.kernels])
        first = rt.calls.index(launches[0])
        self.assertTrue(all(c[0] != "memset" for c in rt.calls[first:]), "a memset after the first kernel")
        lp = ln.plans[next(iter(ln.plans))]
        ptrs = {t.name: x.data_ptr() for t, x in zip(m.inputs, xs)}
        ptrs.update({t.name: o.data_ptr() for t, o in zip(m.outputs, outs)})
        for k, c, grid in zip(m.kernels, launches, checked.grids):
            self.assertEqual(c[2], grid)
            self.assertEqual(c[3], k.block)
            self.assertEqual(c[4], k.dynamic_lds_bytes)
            self.assertEqual(c[5], rt.raw_stream(0))
            # Scratch pointers: read back from the call, then held to the layout.
            got = c[6]
            for i, p in enumerate(k.params):
                if p.kind == "tensor" and m.tensor[p.name].role == "scratch":
                    ptrs[p.name] = struct.unpack("<Q", got[i])[0]
            self.assertEqual(got, expected_args(m, k, sizes, ptrs), k.symbol)
        if m.scratch:
            base = min(ptrs[t.name] for t in m.scratch)
            for t, off in zip(m.scratch, lp.scratch_offsets):
                self.assertEqual(ptrs[t.name], base + off)
                self.assertEqual(off % pl.SCRATCH_ALIGN, 0)
            self.assert_filled(m, checked, rt.calls[:first], ptrs)
        return ln, rt, xs, outs

    def assert_filled(self, m, checked, calls, ptrs):
        """Simulate the memsets and fills on a byte image of the scratch."""
        lo = min(ptrs[t.name] for t in m.scratch)
        hi = max(ptrs[t.name] + checked.elems[t.name] * t.itemsize for t in m.scratch)
        img = bytearray(b"\xAA" * (hi - lo))
        fills = {}
        for c in calls:
            if c[0] == "memset":
                _, width, addr, value, count, _s = c
                img[addr - lo:addr - lo + width * count] = value.to_bytes(width, "little") * count
            elif c[0] == "fill":
                fills[c[3]] = (c[1], c[2])
        for t in m.scratch:
            n = checked.elems[t.name] * t.itemsize
            if t.name in fills:
                self.assertEqual(fills[t.name], (ptrs[t.name], n))
                continue
            want = pl.init_bytes(t) * checked.elems[t.name]
            self.assertEqual(bytes(img[ptrs[t.name] - lo:ptrs[t.name] - lo + n]), want, "scratch %s" % t.name)

    def test_toy_sizes_in_both_widths(self):
        m = toy()
        ln, rt, xs, outs = self.check_call(m, {"M": 1000})
        got = [c for c in rt.calls if c[0] == "launch"][0][6]
        self.assertEqual(got[2], struct.pack("<i", 1000))
        self.assertEqual(got[3], struct.pack("<q", 1000))
        self.assertEqual(got[0], struct.pack("<Q", xs[0].data_ptr()))

    def test_every_export(self):
        dirs = export_dirs()
        if not dirs:
            self.skipTest("no exports under %s (set FP8GEN_EXPORTS)" % EXPORTS)
        for d in dirs:
            with self.subTest(export=d):
                self.check_call(mf.load_manifest(d))

    def test_second_call_new_pointers_same_plan(self):
        m = toy_scratch(("amax", "f32", ["1"], 0))
        ln, rt, xs, _ = self.check_call(m)
        loads = rt.loads
        rt.calls.clear()
        xs2 = inputs_at(m, m.shape)
        outs2 = ln.call(xs2)
        self.assertEqual(len(ln.plans), 1)
        self.assertEqual(rt.loads, loads, "a cached plan loaded its kernels again")
        for c in (c for c in rt.calls if c[0] == "launch"):
            self.assertEqual(struct.unpack("<Q", c[6][0])[0], xs2[0].data_ptr())
            self.assertEqual(struct.unpack("<Q", c[6][1])[0], outs2[0].data_ptr())
        self.assertNotEqual(xs2[0].data_ptr(), xs[0].data_ptr())


class ScratchTest(unittest.TestCase):
    def test_init_bytes(self):
        def enc(dtype, init):
            return pl.init_bytes(mf.parse(json.dumps(dict(json.loads(TOY), tensors=[
                {"name": "x", "role": "input", "dtype": "f32", "shape": ["M"], "doc": ""},
                {"name": "s", "role": "scratch", "dtype": dtype, "shape": ["M"], "init": init, "doc": ""}],
                kernels=[KERNEL]))).tensor["s"])
        self.assertEqual(enc("f32", 0), b"\0\0\0\0")
        self.assertEqual(enc("f32", -1.5), struct.pack("<f", -1.5))
        self.assertEqual(enc("bf16", 1.0), b"\x80\x3f")
        self.assertEqual(enc("bf16", 1 + 2 ** -8), b"\x80\x3f")  # a tie: to the even 1.0
        self.assertEqual(enc("bf16", 1 + 3 * 2 ** -8), b"\x82\x3f")  # a tie: to the even 1 + 2^-6
        self.assertEqual(enc("bf16", 1 + 2 ** -8 + 2 ** -20), b"\x81\x3f")
        self.assertEqual(enc("i32", -1), b"\xff\xff\xff\xff")
        self.assertEqual(enc("i64", 2), (2).to_bytes(8, "little"))
        self.assertEqual(enc("e4m3fn", 0), b"\0")
        self.assertIsNone(enc("e4m3fn", 1))
        self.assertIsNone(enc("f32", 1e300))

    def test_layout_and_memsets(self):
        m = toy_scratch(("a", "f32", ["3"], 0), ("b", "i32", ["M"], 0), ("c", "i32", ["5"], -1),
                        ("d", "f32", ["2"], 1.0), ("e", "i64", ["M"], -1), ("f", "i64", ["2"], 7),
                        ("g", "e5m2", ["M"], 2.0))
        offsets, total, memsets, fills = pl.scratch_layout(m, m.check({"M": 16}).elems)
        self.assertEqual(offsets, (0, 256, 512, 768, 1024, 1280, 1536))
        self.assertEqual(total, 1536 + 16)
        self.assertEqual(memsets, (
            (1, 0, 0, 256 + 64, "a+b"),       # adjacent zero bytes: one memset over both and the padding
            (1, 0xFF, 512, 20, "c"),           # -1: every byte 0xff
            (4, 0x3F800000, 768, 2, "d"),
            (1, 0xFF, 1024, 128, "e"),         # not merged with c: d lies between
        ))
        # 7 as i64 (halves differ) and 2.0 as e5m2: no memset writes them.
        self.assertEqual([(o, n, t.name) for o, n, t in fills], [(1280, 16, "f"), (1536, 16, "g")])
        ArgumentBytesTest().check_call(m, {"M": 16})

    def test_status_word(self):
        m = toy_scratch(("amax", "f32", ["M"], 0), ("status", "i32", ["1"], 0, "1: offsets decrease"))
        ln, rt = launcher(m)
        ln.call(inputs_at(m, m.shape))
        lp = ln.plans[next(iter(ln.plans))]
        rt.words[lp.scratch_offsets[1]] = [1]
        with self.assertRaisesRegex(pl.StatusError, r"status word status = 1 \(1: offsets decrease\)"):
            ln.call(inputs_at(m, m.shape))
        ln.call(inputs_at(m, m.shape), check_status=False)


TOY = json.dumps({k: v for k, v in json.loads(json.dumps({
    "fp8gen_manifest": 1, "op": "toy", "doc": "", "fp8": None, "options": {}, "schedule": {},
    "target": {"name": "sm_90", "vendor": "nvidia", "product": "H100/H200", "wave_size": 32},
    "index_bits": 32, "max_elements": 1 << 30, "shape": {"M": 16},
    "sizes": [{"name": "M", "multiple_of": 1}], "constraints": None, "tensors": [],
    "source": {"file": "toy.cu", "sha256": "0" * 64}, "compile_flags": ["-O3"], "code_object": None,
    "kernels": []})).items()})
KERNEL = {"name": "k", "symbol": "k_0123abcd", "params": [{"name": "x", "kind": "tensor"}], "grid": ["M", "1", "1"],
          "block": [64, 1, 1], "dynamic_lds_bytes": 0, "static_lds_bytes": 0}


class CacheTest(unittest.TestCase):
    def test_keyed_by_shape_and_device(self):
        m = toy()
        ln, rt = launcher(m)
        ln.call(inputs_at(m, {"M": 16}))
        ln.call(inputs_at(m, {"M": 16}))
        self.assertEqual(len(ln.plans), 1)
        ln.call(inputs_at(m, {"M": 40}))
        self.assertEqual(len(ln.plans), 2)
        self.assertEqual(rt.loads, 2, "each plan loads through the runtime (which caches the module per device)")
        # Device 1 while device 0 is current: a plan of its own, issued
        # inside device 1's guard and driver context.
        rt.calls.clear()
        ln.call(inputs_at(m, {"M": 16}, index=1))
        self.assertEqual(len(ln.plans), 3)
        self.assertEqual(rt.guarded, [1])
        self.assertEqual(rt.entered, [1, ("leave", ("prev", 1))])
        self.assertEqual([c[5] for c in rt.calls if c[0] == "launch"], [rt.raw_stream(1)])
        lp1 = [p for p in ln.plans.values() if p.index == 1]
        self.assertEqual(len(lp1), 1)
        self.assertEqual(lp1[0].device, Device("cuda", 1))
        # The launch on device 1 passes device 1's function handle.
        self.assertEqual(lp1[0].kernels[0][0].value, 0x2000)

    def test_second_call_does_no_manifest_work(self):
        """A call at a shape seen before: no size inference, no shape check,
        no expression evaluated, no plan built, no kernels looked up; only
        the allocations, the pointer writes and the driver calls."""
        m = toy_scratch(("amax", "f32", ["1"], 0))
        ln, rt = launcher(m)
        counts = {}

        def counting(owner, name):
            inner = getattr(owner, name)

            def f(*a, **kw):
                counts[name] = counts.get(name, 0) + 1
                return inner(*a, **kw)
            return inner, f

        patched = [(owner, name) + counting(owner, name) for owner, name in [
            (mf.Manifest, "check"), (mf.Manifest, "dims_at"), (mf.Manifest, "grid_at"), (mf.Expr, "eval"),
            (pl, "infer_sizes"), (pl, "check_plan"), (pl, "LaunchPlan"), (pl, "scratch_layout"),
            (pl.Launcher, "check"), (pl.Launcher, "check_shapes"), (pl.Launcher, "plan")]]
        for owner, name, _, f in patched:
            setattr(owner, name, f)
        try:
            ln.call(inputs_at(m, {"M": 16}))
            for name in ("check", "eval", "infer_sizes", "check_plan", "LaunchPlan", "plan"):
                self.assertGreater(counts.get(name, 0), 0, "the first call did not reach %s" % name)
            loads = rt.loads
            calls = [inputs_at(m, {"M": 16}) for _ in range(3)]  # new tensors, new pointers
            counts.clear()
            rt.calls.clear()
            for xs in calls:
                ln.call(xs)
            self.assertEqual(counts, {}, "a call at a planned shape did manifest work")
            self.assertEqual(rt.loads, loads)
            self.assertEqual([c[0] for c in rt.calls], ["memset", "launch", "launch"] * 3)
        finally:
            for owner, name, inner, _ in patched:
                setattr(owner, name, inner)

    def test_errors_name_the_input_and_are_not_cached(self):
        m = toy()
        ln, rt = launcher(m)
        ln.call(inputs_at(m, {"M": 16}))
        x = inputs_at(m, {"M": 16})[0]
        with self.assertRaisesRegex(TypeError, r"toy: input x is fake.bf16; want fake.f32 \(f32\)"):
            ln.call([Tensor(x.shape, DTYPES["bf16"], x.device)])
        with self.assertRaisesRegex(pl.InputError, "input x is not contiguous"):
            ln.call([Tensor(x.shape, x.dtype, x.device, contiguous=False)])
        with self.assertRaisesRegex(pl.InputError, "input x is on cpu:None; want a CUDA/ROCm device"):
            ln.call([Tensor(x.shape, x.dtype, Device("cpu", None))])
        with self.assertRaisesRegex(ShapeError, r"input x has shape \(4, 4\); want 1 dimensions \[M\]"):
            ln.call([Tensor((4, 4), x.dtype, x.device)])
        with self.assertRaisesRegex(TypeError, "input x is str, not a tensor"):
            ln.call(["x"])
        with self.assertRaisesRegex(TypeError, "toy takes 1 inputs, got 2"):
            ln.call([x, x])
        self.assertEqual(len(ln.plans), 1)

    def test_mixed_devices(self):
        m = mf.parse(json.dumps(dict(json.loads(TOY), tensors=[
            {"name": "x", "role": "input", "dtype": "f32", "shape": ["M"], "doc": ""},
            {"name": "w", "role": "input", "dtype": "f32", "shape": ["M"], "doc": ""}],
            kernels=[dict(KERNEL, params=[{"name": "x", "kind": "tensor"}, {"name": "w", "kind": "tensor"}])])))
        ln, rt = launcher(m)
        x0, w0 = inputs_at(m, {"M": 16}, 0)
        x1, w1 = inputs_at(m, {"M": 16}, 1)
        ln.call([x0, w0])
        with self.assertRaisesRegex(pl.InputError, "input w is on cuda:1, another input on cuda:0"):
            ln.call([x0, w1])
        self.assertEqual(len(ln.plans), 1)

    def test_subclass_is_planned_not_cached(self):
        m = toy()
        ln, rt = launcher(m)
        rt.tensor_type = Tensor
        x = Subclass((16,), DTYPES["f32"], Device("cuda", 0))
        (y,) = ln.call([x])
        self.assertEqual(y.shape, (16,))
        self.assertEqual(len(ln.plans), 0)

    def test_shape_class_errors(self):
        m = real_manifest("rowwise_cast")
        ln, rt = launcher(m)
        k = m.shape["K"]
        mult = {s.name: s.multiple_of for s in m.sizes}
        with self.assertRaisesRegex(ShapeError, "size K=%d: this build is compiled for multiples of %d"
                                    % (k + 1, mult["K"])):
            ln.call(inputs_at(m, dict(m.shape, K=k + 1)))
        self.assertEqual(len(ln.plans), 0)

    def test_cache_limit(self):
        m = toy()
        ln, rt = launcher(m)
        for i in range(pl.PLAN_CACHE_LIMIT + 3):
            ln.call(inputs_at(m, {"M": i + 1}))
        self.assertLessEqual(len(ln.plans), pl.PLAN_CACHE_LIMIT)
        self.assertGreater(len(ln.plans), 0)


class DriverFailureTest(unittest.TestCase):
    def test_retry_inside_context_when_nothing_was_issued(self):
        m = toy_scratch(("amax", "f32", ["1"], 0))
        ln, rt = launcher(m)
        rt.fail = [201]  # the first memset: no context current
        ln.call(inputs_at(m, m.shape))
        self.assertEqual(rt.entered, [0, ("leave", ("prev", 0))])
        self.assertEqual([c[0] for c in rt.calls], ["memset", "launch", "launch"])

    def test_no_retry_after_an_issued_call(self):
        m = toy_scratch(("amax", "f32", ["1"], 0))
        ln, rt = launcher(m)
        rt.fail = [0, 0, 201]  # the second kernel fails: the memset and the first kernel were issued
        with self.assertRaisesRegex(RuntimeError, "driver 201: toy: launch of k2_0123abcd"):
            ln.call(inputs_at(m, m.shape))
        self.assertEqual(rt.entered, [])

    def test_other_codes_raise(self):
        m = toy()
        ln, rt = launcher(m)
        rt.fail = [700]
        with self.assertRaisesRegex(RuntimeError, "driver 700: toy: launch of k_0123abcd"):
            ln.call(inputs_at(m, m.shape))


class ThreadsTest(unittest.TestCase):
    def test_argument_buffer_is_not_shared_mid_launch(self):
        """Two threads calling one plan: every launch sees its own call's
        pointers, though the driver call lets the other thread run."""
        m = toy()
        ln, rt = launcher(m)
        inner = rt._launch
        seen = []

        def slow_launch(*a):
            time.sleep(0.0002)  # another thread runs here
            k = rt.by_fn[a[0].value]
            got = pl.param_bytes(k, a[9])
            seen.append((struct.unpack("<Q", got[0])[0], struct.unpack("<Q", got[1])[0]))
            return inner(*a)

        ln.call(inputs_at(m, m.shape))
        lp = next(iter(ln.plans.values()))
        lp.launch = slow_launch
        pairs = []
        lock = threading.Lock()

        def worker():
            for _ in range(50):
                x = inputs_at(m, m.shape)
                (y,) = ln.call(x)
                with lock:
                    pairs.append((x[0].data_ptr(), y.data_ptr()))

        ts = [threading.Thread(target=worker) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(len(seen), 150)
        self.assertEqual(sorted(seen), sorted(pairs))


class InferSizesTest(unittest.TestCase):
    def test_sizes_no_input_gives_alone(self):
        m = real_manifest("qk_norm_rope")
        shapes = [m.dims_at(t, m.shape) for t in m.inputs]
        given, fixed = pl.fixed_sizes(m)
        self.assertEqual((given, fixed), ({}, {n: m.shape[n] for n in ("HQ", "HKV")}))
        self.assertEqual(pl.infer_sizes(m, shapes, fixed), m.shape)
        with self.assertRaisesRegex(ShapeError, "load\\(sizes=\\): 'Q' is no size of the op"):
            pl.fixed_sizes(m, {"Q": 1})
        with self.assertRaisesRegex(ShapeError, "load\\(sizes=\\): HQ=0 must be an int >= 1"):
            pl.fixed_sizes(m, {"HQ": 0})
        self.assertEqual(pl.fixed_sizes(m, {"HQ": 64})[1]["HQ"], 64)
        with self.assertRaisesRegex(ShapeError, "size HKV, HQ cannot be inferred|size HQ, HKV cannot be inferred"):
            pl.infer_sizes(m, shapes)
        with self.assertRaisesRegex(ShapeError, "size S is %d by input cos" % (m.shape["S"] + 16)):
            bad = list(shapes)
            i = [t.name for t in m.inputs].index("cos")
            bad[i] = (m.shape["S"] + 16,) + tuple(bad[i][1:])
            pl.infer_sizes(m, bad, fixed)
        with self.assertRaisesRegex(ShapeError, "size B is %d by .* but 3 by load\\(sizes=\\)" % m.shape["B"]):
            pl.infer_sizes(m, shapes, fixed, {"B": 3})


class Sym(int):
    """A stand-in for a SymInt: an int the fake path must not take for a
    concrete size (type(v) is not int)."""


class FakeOutputsTest(unittest.TestCase):
    """The registered operator's fake implementation (ops.Op._fake) makes
    empty tensors of Launcher.fake_outputs's dims and dtypes: shapes from
    the manifest, no plan, no GPU work."""

    def test_concrete_shapes(self):
        m = real_manifest("qk_norm_rope")
        ln, rt = launcher(m)
        xs = inputs_at(m, m.shape)
        got = ln.fake_outputs(xs)
        self.assertEqual(got, [(m.dims_at(t, m.shape), DTYPES[t.dtype]) for t in m.outputs])
        b, s, hq, hkv, d = (m.shape[n] for n in ("B", "S", "HQ", "HKV", "D"))
        self.assertEqual([g[0] for g in got], [(b, s, hq, d), (b, s, hkv, d), (b, s, hkv, d)])
        self.assertEqual((len(ln.plans), rt.loads, rt.calls), (0, 0, []), "the fake planned, loaded or launched")
        # Meta tensors (shape propagation by hand) are taken; CPU ones are not.
        meta = [Tensor(x.shape, x.dtype, Device("meta", None)) for x in xs]
        self.assertEqual(ln.fake_outputs(meta), got)
        with self.assertRaisesRegex(pl.InputError, "want a CUDA/ROCm device"):
            ln.fake_outputs([Tensor(x.shape, x.dtype, Device("cpu", None)) for x in xs])

    def test_concrete_shapes_are_held_to_the_class(self):
        m = real_manifest("rowwise_cast")
        ln, _ = launcher(m)
        k = m.shape["K"]
        with self.assertRaisesRegex(ShapeError, "size K=%d: this build is compiled for multiples" % (k + 1)):
            ln.fake_outputs(inputs_at(m, dict(m.shape, K=k + 1)))
        with self.assertRaisesRegex(TypeError, "input x is fake.f32; want fake.bf16"):
            ln.fake_outputs([Tensor((8, k), DTYPES["f32"], Device("cuda", 0))])

    def test_symbolic_sizes(self):
        m = real_manifest("qk_norm_rope")
        ln, _ = launcher(m)
        sizes = dict(m.shape)
        xs = inputs_at(m, sizes)
        b, s = Sym(sizes["B"]), Sym(sizes["S"])
        # qkv [B, S, (HQ + 2 * HKV) * D], cos and sin [S, D]: B and S symbolic.
        sym = []
        for t, x in zip(m.inputs, xs):
            shape = tuple(b if d.plain_name == "B" else s if d.plain_name == "S" else v for d, v in zip(t.shape, x.shape))
            sym.append(Tensor(shape, x.dtype, x.device))
        got = ln.fake_outputs(sym)
        for (dims, dt), t in zip(got, m.outputs):
            self.assertEqual(dims, m.dims_at(t, sizes))
            for d, v in zip(t.shape, dims):
                if d.plain_name in ("B", "S"):
                    self.assertIs(v, b if d.plain_name == "B" else s, "a dimension that is a size alone stays symbolic")
                else:
                    self.assertIs(type(v), int)

    def test_symbolic_size_in_an_expression(self):
        m = real_manifest("tensorwise_cast")
        ln, _ = launcher(m)
        xs = inputs_at(m, m.shape)
        sym = [Tensor((Sym(x.shape[0]), Sym(x.shape[1])), x.dtype, x.device) for x in xs]
        got = ln.fake_outputs(sym)
        self.assertEqual([g[0] for g in got], [m.dims_at(t, m.shape) for t in m.outputs])
        self.assertIs(type(got[1][0][0]), int, "inv_scale[1]: evaluated")


if __name__ == "__main__":
    unittest.main()
