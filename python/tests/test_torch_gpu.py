"""The PyTorch loader on a GPU, bit for bit against fp8gen's Go runtime.

For every op `fp8gen list` prints, at small odd shapes and a few option
sets: export for the device's target with a code object, make random
inputs, run them through the loader and through `fp8gen run --device gpu`
(inputs and outputs exchanged as .npy), and require every output tensor to
be bitwise equal; then (at the first shape of each op and option set) the
same through torch.compile(fullgraph=True). Also: a side stream, the JIT
path (an export without a code object), a status word, and the refusals.

QKNormRopeGradTest pairs qk_norm_rope with qk_norm_rope_bwd and holds the
forward and the gradients to a plain-torch float64 reference written here
(RMS-norm of each q and k head with its weight, then RoPE; v copied),
through autograd eagerly, through the registered operator, and through
torch.compile(fullgraph=True); torch.library.opcheck checks the operators'
registrations (schema, fake, autograd, AOT dispatch with dynamic shapes).

Env:
  FP8GEN  the fp8gen CLI binary (cd /work/main && go build -o /tmp/fp8gen ./cmd/fp8gen);
          default: fp8gen in PATH

Without torch, or without a CUDA/ROCm device, the GPU tests skip. The .npy
tests (NpyThroughInterpreterTest) need only FP8GEN: they run Go's CPU
interpreter, so they check the test's own .npy writer and reader here.
"""

import ast
import ctypes
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fp8gen_torch import manifest as mf  # noqa: E402

try:
    import torch
except ImportError:  # the manifest tests run without it
    torch = None

FP8GEN = os.environ.get("FP8GEN") or shutil.which("fp8gen")


def gpu_skip_reason():
    if torch is None:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch %s sees no CUDA/ROCm device" % torch.__version__
    if not FP8GEN:
        return "set FP8GEN to the fp8gen CLI binary (go build -o /tmp/fp8gen ./cmd/fp8gen)"
    return None


# Small shapes each op accepts: odd sizes (no vector width divides 33, 17,
# 7), groups shorter and longer than a tile. An op not listed here runs at
# its example shape.
SHAPES = {
    "rowwise_cast": ["M=40,K=72", "M=7,K=33"],
    "colwise_cast": ["M=40,K=72", "M=7,K=33"],
    "tensorwise_cast": ["M=40,K=72", "M=7,K=33"],
    "expert_colwise_cast": ["E=3,K=72,N=40", "E=3,K=33,N=7"],
    "grouped_colwise_cast": ["T=200,K=72,E=5", "T=130,K=17,E=4"],
    "tensorwise_cast_transpose": ["M=40,K=72", "M=7,K=33"],
    "rowcol_cast": ["M=40,K=72", "M=7,K=33"],
    "grouped_rowcol_cast": ["T=200,K=72,E=5", "T=130,K=17,E=4"],
    "grouped_mx_cast": ["T=200,K=72,E=5", "T=130,K=17,E=4"],
    "swiglu_probs": ["R=40,F=72", "R=7,F=8"],
    "swiglu_probs_bwd": ["R=40,F=72", "R=7,F=8"],
}
# Option sets beyond the defaults (flags of both export and run).
OPTIONS = [[], ["--in-dtype", "f32", "--fp8", "e5m2", "--pow2"]]
EXTRA_OPTIONS = {
    "expert_colwise_cast": [["--opt", "layout=nk"]],
    "grouped_mx_cast": [["--opt", "scales=swizzled"]],
    "mx_cast": [["--opt", "scales=swizzled", "--opt", "dim=both"], ["--opt", "scales=gfx950", "--opt", "dim=1"]],
    "swiglu_probs": [["--fp8", "e5m2", "--pow2"], ["--opt", "quant=tensorwise"],
                     ["--opt", "quant=none", "--opt", "layout=interleaved", "--opt", "probs=false"]],
    "swiglu_probs_bwd": [["--opt", "quant=rowwise", "--fp8", "e5m2"], ["--opt", "layout=interleaved"]],
}

NPY_DESCR = {name: row[2] for name, row in mf.DTYPE_TABLE.items()}


# ---------------------------------------------------------------------------
# .npy, the little fp8gen needs (npy/npy.go): version 1.0, C order

def npy_bytes(descr, shape, data):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((-(10 + len(header) + 1)) % 64) + "\n"  # preamble + header: a multiple of 64
    h = header.encode("latin-1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data


def write_npy(path, descr, shape, data):
    with open(path, "wb") as f:
        f.write(npy_bytes(descr, shape, data))


def read_npy(path):
    """(descr, shape, raw little-endian bytes)."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:6] != b"\x93NUMPY":
        raise ValueError("%s: not a .npy file" % path)
    if b[6] == 1:
        (n,), off = struct.unpack("<H", b[8:10]), 10
    else:
        (n,), off = struct.unpack("<I", b[8:12]), 12
    hdr = ast.literal_eval(b[off:off + n].decode("latin-1"))
    if hdr["fortran_order"]:
        raise ValueError("%s: Fortran order" % path)
    return hdr["descr"], tuple(hdr["shape"]), b[off + n:]


# ---------------------------------------------------------------------------
# fp8gen's CLI

def fp8gen(*args, timeout=600):
    r = subprocess.run([FP8GEN] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def list_ops_and_targets():
    rc, out = fp8gen("list")
    if rc != 0:
        raise RuntimeError("fp8gen list: " + out)
    ops, targets, section = [], [], None
    for line in out.splitlines():
        if line.startswith("Ops:"):
            section = ops
        elif line.startswith("Targets:"):
            section = targets
        else:
            m = re.match(r"^  (\w+)\s", line)
            if m and section is not None:
                section.append(m.group(1))
    return ops, targets


def export(op, target, shape, opts, folder, compile_="yes"):
    args = ["export", op, "--target", target, "--compile", compile_, "-o", folder] + opts
    if shape:
        args += ["--shape", shape]
    return fp8gen(*args)


def no_compiler(out):
    return "no GPU compiler found" in out


# ---------------------------------------------------------------------------
# Inputs

def offsets_for(t_rows, groups, g):
    """Valid offsets: non-decreasing group ends, the last T, one group empty."""
    cuts = sorted(torch.randint(0, t_rows + 1, (groups - 1,), generator=g).tolist())
    if groups >= 3:
        cuts[1] = cuts[0]  # group 1 is empty
    elif groups == 2:
        cuts[0] = 0  # group 0 is empty
    return cuts + [t_rows]


def make_inputs(m, sizes, seed):
    """Random inputs on the CPU, by name, for manifest m at sizes."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for t in m.inputs:
        dims = m.dims_at(t, sizes)
        if t.dtype in ("f32", "bf16"):
            x = torch.randn(dims, generator=g, dtype=torch.float32)
            # Scales that differ by slice, a few large values, a zero slice.
            x = x * torch.exp2(torch.randint(-6, 7, (dims[0],) + (1,) * (len(dims) - 1), generator=g).float())
            x.view(-1)[::13] *= 1000.0
            x[0] = 0.0
            out[t.name] = x.to(torch.bfloat16 if t.dtype == "bf16" else torch.float32)
        elif t.name == "offsets" and t.dtype == "i32":
            groups, rows = dims[0], sizes["T"]
            out[t.name] = torch.tensor(offsets_for(rows, groups, g), dtype=torch.int32)
        else:
            raise unittest.SkipTest("no input generator for %s %s %s" % (m.op, t.name, t.dtype))
    return out


def raw(t):
    """A tensor's bytes, little-endian, row-major."""
    t = t.detach().cpu().contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def first_diff(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


# ---------------------------------------------------------------------------


@unittest.skipIf(gpu_skip_reason(), gpu_skip_reason() or "")
class TorchGPUTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from fp8gen_torch import driver, load, ops  # torch is here: import the loader
        cls.driver, cls.load, cls.opsmod = driver, staticmethod(load), ops
        cls.index = torch.cuda.current_device()
        cls.target = driver.device_target(cls.index)
        cls.ops, targets = list_ops_and_targets()
        if cls.target not in targets:
            raise unittest.SkipTest("the device is %s; fp8gen knows %s" % (cls.target, ", ".join(targets)))
        cls.tmp = tempfile.mkdtemp(prefix="fp8gen-torch-test-")
        cls.counts = {"runs": 0, "outputs": 0, "compiled": 0}
        print("\n  device %d: %s (%s), torch %s, fp8gen %s" % (
            cls.index, torch.cuda.get_device_name(cls.index), cls.target, torch.__version__, FP8GEN), file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        c = cls.counts
        print("\n  compared %d runs (%d output tensors) bit for bit with fp8gen run; %d through torch.compile"
              % (c["runs"], c["outputs"], c["compiled"]), file=sys.stderr)

    def folder(self, *parts):
        d = os.path.join(self.tmp, "-".join(p.replace("=", "").replace(",", "_").replace("-", "") for p in parts if p))
        return d

    def export_or_skip(self, op, shape, opts, compile_="yes", target=None):
        d = self.folder(op, shape, *opts, compile_, target or "")
        rc, out = export(op, target or self.target, shape, opts, d, compile_)
        if rc != 0 and no_compiler(out):
            self.skipTest("fp8gen found no compiler for %s: %s" % (self.target, out.strip()))
        if rc != 0 and ("has no option" in out or "unknown option" in out):
            self.skipTest("%s takes no %s" % (op, " ".join(opts)))
        self.assertEqual(rc, 0, "fp8gen export %s: %s" % (op, out))
        return d

    def go_outputs(self, m, shape, opts, inputs, tag):
        """The outputs fp8gen run --device gpu computes from the same inputs."""
        d = self.folder(m.op, shape, *opts, tag)
        os.makedirs(d, exist_ok=True)
        # The export's schedule: a float sum's bits follow the schedule, and run
        # would otherwise take the tuning cache's.
        sched = ",".join("%s=%d" % kv for kv in sorted(m.schedule.items()))
        args = ["run", m.op, "--device", "gpu", "--target", self.target, "--shape", shape,
                "--schedule", sched] + opts
        for t in m.inputs:
            x = inputs[t.name]
            p = os.path.join(d, t.name + ".npy")
            write_npy(p, NPY_DESCR[t.dtype], tuple(x.shape), raw(x))
            args += ["--in", "%s=%s" % (t.name, p)]
        out = os.path.join(d, "out")
        args += ["--out", out]
        rc, log = fp8gen(*args)
        self.assertEqual(rc, 0, "fp8gen %s:\n%s" % (" ".join(args), log))
        return {t.name: read_npy(os.path.join(out, t.name + ".npy")) for t in m.outputs}

    def assert_same(self, m, sizes, got, want, what):
        for t, x in zip(m.outputs, got):
            descr, shape, data = want[t.name]
            dims = m.dims_at(t, sizes)
            self.assertEqual(tuple(x.shape), dims, "%s: %s shape" % (what, t.name))
            self.assertEqual((descr, shape), (NPY_DESCR[t.dtype], dims), "%s: %s from fp8gen run" % (what, t.name))
            self.assertEqual(x.dtype, self.opsmod.torch_dtype(t.dtype))
            b = raw(x)
            if b != data:
                i = first_diff(b, data) // t.itemsize
                self.fail("%s: output %s differs from fp8gen run's, first at element %d of %d"
                          % (what, t.name, i, len(data) // t.itemsize))

    def test_every_op_bitwise_against_go(self):
        dev = torch.device("cuda", self.index)
        seed = 1
        for op in self.ops:
            for opts in OPTIONS + EXTRA_OPTIONS.get(op, []):
                for n_shape, shape in enumerate(SHAPES.get(op, [""])):
                    what = "%s %s %s" % (op, shape or "(example shape)", " ".join(opts))
                    with self.subTest(what):
                        d = self.export_or_skip(op, shape, opts)
                        k = self.load(d)
                        m = k.manifest
                        self.assertIsNotNone(m.code_object, "%s: export has no code object" % what)
                        if not shape:
                            shape = ",".join("%s=%d" % (n, m.shape[n]) for n in m.size_names)
                        sizes = dict(m.shape)
                        seed += 1
                        cpu = make_inputs(m, sizes, seed)
                        want = self.go_outputs(m, shape, opts, cpu, "go")
                        inputs = [cpu[t.name].to(dev) for t in m.inputs]

                        got = k(*inputs)
                        self.assertEqual(len(got), len(m.outputs))
                        self.assert_same(m, sizes, got, want, what)
                        by_name = k.call_dict(**{t.name: x for t, x in zip(m.inputs, inputs)})
                        self.assert_same(m, sizes, [by_name[t.name] for t in m.outputs], want, what + " (by name)")
                        self.counts["runs"] += 1
                        self.counts["outputs"] += len(m.outputs)

                        if n_shape > 0:
                            continue  # torch.compile once per op and option set: compiles are slow
                        torch._dynamo.reset()  # a fresh cache: each op is a new graph

                        def fn(*xs):
                            return k(*xs)

                        compiled = torch.compile(fn, fullgraph=True)(*inputs)
                        self.assert_same(m, sizes, compiled, want, what + " (torch.compile)")
                        self.counts["compiled"] += 1

    def test_side_stream_and_jit(self):
        op, shape = "rowwise_cast", SHAPES["rowwise_cast"][1]
        if op not in self.ops:
            self.skipTest("no rowwise_cast")
        k = self.load(self.export_or_skip(op, shape, []))
        x = make_inputs(k.manifest, dict(k.manifest.shape), 99)["x"].cuda(self.index)
        ref = [raw(t) for t in k(x)]
        s = torch.cuda.Stream(self.index)
        s.wait_stream(torch.cuda.current_stream(self.index))
        with torch.cuda.stream(s):
            on_side = k(x)
        s.synchronize()
        self.assertEqual([raw(t) for t in on_side], ref)
        # No code object: the loader compiles the source itself (nvcc/hipcc).
        cache = os.path.join(self.tmp, "jit-cache")
        old = os.environ.get("FP8GEN_TORCH_CACHE")
        os.environ["FP8GEN_TORCH_CACHE"] = cache
        try:
            j = self.load(self.export_or_skip(op, shape, [], compile_="no"))
            self.assertIsNone(j.manifest.code_object)
            try:
                out = j(x)
            except self.driver.CompileError as e:
                self.skipTest("no compiler for the JIT path: %s" % e)
            self.assertEqual([raw(t) for t in out], ref)
            self.assertTrue(os.listdir(cache), "the JIT cache is empty")
        finally:
            if old is None:
                os.environ.pop("FP8GEN_TORCH_CACHE", None)
            else:
                os.environ["FP8GEN_TORCH_CACHE"] = old

    def test_status_word(self):
        op = "grouped_colwise_cast"
        if op not in self.ops:
            self.skipTest("no grouped_colwise_cast")
        k = self.load(self.export_or_skip(op, "T=200,K=72,E=5", []))
        x = make_inputs(k.manifest, dict(k.manifest.shape), 5)["x"].cuda(self.index)
        bad = torch.tensor([0, 120, 60, 150, 200], dtype=torch.int32, device=x.device)  # decreasing
        with self.assertRaisesRegex(self.opsmod.StatusError, "status word status = [1-9]"):
            k(x, bad)
        quiet = self.load(k.manifest.dir, check_status=False)
        self.assertEqual(len(quiet(x, bad)), 2)  # no sync, no error: the caller's choice
        torch.cuda.synchronize()

    def test_refusals(self):
        op, shape = "rowwise_cast", "M=40,K=72"
        if op not in self.ops:
            self.skipTest("no rowwise_cast")
        k = self.load(self.export_or_skip(op, shape, []))
        x = torch.zeros(40, 72, dtype=torch.bfloat16, device="cuda")
        k(x)
        with self.assertRaisesRegex(TypeError, "input x is torch.float32; want torch.bfloat16"):
            k(x.float())
        with self.assertRaisesRegex(self.opsmod.InputError, "not contiguous"):
            k(torch.zeros(72, 40, dtype=torch.bfloat16, device="cuda").t())
        with self.assertRaisesRegex(self.opsmod.InputError, "want a CUDA/ROCm device"):
            k(x.cpu())
        with self.assertRaisesRegex(mf.ShapeError, "size K=76: this build is compiled for multiples of 8"):
            k(torch.zeros(40, 76, dtype=torch.bfloat16, device="cuda"))
        with self.assertRaisesRegex(mf.ShapeError, "want 2 dimensions"):
            k(torch.zeros(40 * 72, dtype=torch.bfloat16, device="cuda"))
        with self.assertRaisesRegex(TypeError, "input x missing"):
            k()
        with self.assertRaisesRegex(TypeError, "has no input y"):
            k(x, y=x)
        other = "gfx942" if self.target.startswith("sm_") else "sm_90"
        w = self.load(self.export_or_skip(op, shape, [], compile_="no", target=other))
        with self.assertRaisesRegex(self.driver.DeviceError, "export is for %s.*is %s" % (other, self.target)):
            w(x)


# ---------------------------------------------------------------------------
# qk_norm_rope's autograd against a plain-torch reference


def qk_norm_rope_reference(qkv, q_weight, k_weight, cos, sin, hq, hkv, eps, neox=True, bshd=True):
    """qk_norm_rope in float64 with plain torch ops (docs/ops.md,
    ops/qknorm.go): qkv packed by KV group (each group's HQ/HKV query heads,
    then its key head, then its value head, D each); each q and k head
    RMS-normalised, r = 1/sqrt(mean(t^2) + eps), times its weight, then
    rotated: y = n*cos[s] + rot(n)*sin[s], rot rotate-half (neox) or
    interleaved (gptj); v copied. Differentiable in every input."""
    if bshd:
        b, s_, w = qkv.shape
    else:
        s_, b, w = qkv.shape
    d = w // (hq + 2 * hkv)
    g = hq // hkv
    x = qkv.double().reshape(qkv.shape[0], qkv.shape[1], hkv, g + 2, d)
    q = x[:, :, :, :g].reshape(qkv.shape[0], qkv.shape[1], hq, d)
    k = x[:, :, :, g]
    v = x[:, :, :, g + 1]

    def norm(t, wt):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * wt.double()

    def rot(n):
        if neox:
            h = d // 2
            return torch.cat([-n[..., h:], n[..., :h]], -1)
        return torch.stack([-n[..., 1::2], n[..., 0::2]], -1).flatten(-2)

    shape = (1, s_, 1, d) if bshd else (s_, 1, 1, d)
    c, sn = cos.double().reshape(shape), sin.double().reshape(shape)

    def rope(n):
        return n * c + rot(n) * sn

    return rope(norm(q, q_weight)), rope(norm(k, k_weight)), v


def rope_tables(s_, d, neox, device):
    """RoPE's cos and sin [S, D] f32 at theta 10000, as fp8gen's tests make them."""
    i = torch.arange(d, dtype=torch.float64)
    pair = (i % (d // 2)) if neox else torch.div(i, 2, rounding_mode="floor")
    ang = torch.arange(s_, dtype=torch.float64)[:, None] * torch.pow(10000.0, -2 * pair / d)[None, :]
    return ang.cos().float().to(device), ang.sin().float().to(device)


@unittest.skipIf(gpu_skip_reason(), gpu_skip_reason() or "")
class QKNormRopeGradTest(unittest.TestCase):
    SHAPE = "B=2,S=48,HQ=32,HKV=4,D=128"

    @classmethod
    def setUpClass(cls):
        from fp8gen_torch import driver, load
        cls.tmp = tempfile.mkdtemp(prefix="fp8gen-torch-grad-")
        target = driver.device_target(torch.cuda.current_device())
        dirs = {}
        for op in ("qk_norm_rope", "qk_norm_rope_bwd"):
            d = dirs[op] = os.path.join(cls.tmp, op)
            rc, out = export(op, target, cls.SHAPE, [], d)
            if rc != 0 and no_compiler(out):
                raise unittest.SkipTest("fp8gen found no compiler for %s: %s" % (target, out.strip()))
            if rc != 0:
                raise AssertionError("fp8gen export %s: %s" % (op, out))
        cls.op = load(dirs["qk_norm_rope"], backward=dirs["qk_norm_rope_bwd"])
        m = cls.op.manifest
        cls.sizes = dict(m.shape)
        cls.eps = float(m.options["eps"])
        cls.neox = m.options["rope"] == "neox"
        if m.options.get("order") != "bshd" or m.options.get("angles") != "table":
            raise unittest.SkipTest("the reference here takes order=bshd, angles=table")
        print("\n  qk_norm_rope %s with its backward on %s" % (cls.SHAPE, torch.cuda.get_device_name()), file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def inputs(self, seed=3):
        z = self.sizes
        b, s_, hq, hkv, d = z["B"], z["S"], z["HQ"], z["HKV"], z["D"]
        g = torch.Generator(device="cuda").manual_seed(seed)
        dev = torch.device("cuda", torch.cuda.current_device())
        qkv = (torch.randn(b, s_, (hq + 2 * hkv) * d, generator=g, device=dev) * 2).bfloat16()
        qw = (1 + 0.1 * torch.randn(d, generator=g, device=dev)).bfloat16()
        kw = (1 + 0.1 * torch.randn(d, generator=g, device=dev)).bfloat16()
        cos, sin = rope_tables(s_, d, self.neox, dev)
        grads = [torch.randn(dims, generator=g, device=dev).bfloat16()
                 for dims in ((b, s_, hq, d), (b, s_, hkv, d), (b, s_, hkv, d))]
        return [qkv, qw, kw, cos, sin], grads

    def reference(self, ins, grads):
        leaves = [x.detach().double().requires_grad_(i < 3) for i, x in enumerate(ins)]
        outs = qk_norm_rope_reference(*leaves, self.sizes["HQ"], self.sizes["HKV"], self.eps, self.neox)
        loss = sum((o * g.double()).sum() for o, g in zip(outs, grads))
        dx = torch.autograd.grad(loss, leaves[:3])
        return [o.detach() for o in outs], dx

    def assert_near(self, got, want, what, rtol=2 ** -7):
        """Within a bf16 rounding of the float64 reference, relative to the
        element or (where terms cancel) to the tensor's largest."""
        self.assertEqual(tuple(got.shape), tuple(want.shape), what)
        torch.testing.assert_close(got.double(), want, rtol=rtol, atol=2 ** -8 * want.abs().max().item(),
                                   msg=lambda m: "%s: %s" % (what, m))

    def grads_of(self, f, ins, grads):
        leaves = [x.detach().clone().requires_grad_(i < 3) for i, x in enumerate(ins)]
        outs = f(*leaves)
        loss = sum((o.float() * g.float()).sum() for o, g in zip(outs, grads))
        loss.backward()
        return outs, [x.grad for x in leaves[:3]], leaves

    def test_forward_against_reference(self):
        ins, grads = self.inputs()
        q, k, v = self.op(*ins)
        (rq, rk, rv), _ = self.reference(ins, grads)
        self.assertEqual((q.dtype, k.dtype, v.dtype), (torch.bfloat16,) * 3)
        self.assert_near(q, rq, "q")
        self.assert_near(k, rk, "k")
        self.assertTrue(torch.equal(v, rv.bfloat16()), "v is a copy of qkv's value heads")

    def test_gradients_eager(self):
        ins, grads = self.inputs()
        outs, dx, leaves = self.grads_of(self.op, ins, grads)
        self.assertIsNotNone(outs[0].grad_fn, "the forward was not recorded for autograd")
        _, want = self.reference(ins, grads)
        for name, got, ref, x in zip(("qkv", "q_weight", "k_weight"), dx, want, leaves):
            self.assertEqual(got.dtype, x.dtype, name)
            self.assert_near(got, ref, "d " + name)
        self.assertIsNone(leaves[3].grad)
        # Only qkv requires grad: the weights get none, qkv the same.
        only = [x.detach().clone().requires_grad_(i == 0) for i, x in enumerate(ins)]
        loss = sum((o.float() * g.float()).sum() for o, g in zip(self.op(*only), grads))
        loss.backward()
        self.assertTrue(torch.equal(only[0].grad, dx[0]))
        self.assertIsNone(only[1].grad)

    def test_registered_operator_and_eager_agree(self):
        """The operator's autograd formula (register_autograd, what
        torch.compile uses) and the eager path: the same bits."""
        ins, grads = self.inputs(5)
        _, eager, _ = self.grads_of(self.op, ins, grads)
        _, via_op, _ = self.grads_of(lambda *xs: self.op._overload(*xs, True), ins, grads)
        for name, a, b in zip(("qkv", "q_weight", "k_weight"), eager, via_op):
            self.assertTrue(torch.equal(a, b), "d %s: the operator's gradient differs from the eager path's" % name)

    def test_gradients_through_torch_compile(self):
        ins, grads = self.inputs(7)
        eo, eager, _ = self.grads_of(self.op, ins, grads)
        torch._dynamo.reset()
        op = self.op
        compiled = torch.compile(lambda *xs: op(*xs), fullgraph=True)
        co, got, _ = self.grads_of(compiled, ins, grads)
        for name, a, b in zip(("q", "k", "v"), eo, co):
            self.assertTrue(torch.equal(a, b), "%s under torch.compile differs from eager" % name)
        for name, a, b in zip(("qkv", "q_weight", "k_weight"), eager, got):
            self.assertTrue(torch.equal(a, b), "d %s under torch.compile differs from eager" % name)

    def test_opcheck(self):
        opcheck = getattr(torch.library, "opcheck", None)
        if opcheck is None:
            self.skipTest("torch %s has no torch.library.opcheck" % torch.__version__)
        ins, grads = self.inputs(11)
        args = [x.detach().clone().requires_grad_(i < 3) for i, x in enumerate(ins)] + [True]
        opcheck(self.op._overload, tuple(args))
        opcheck(self.op._overload, tuple(x.detach() if hasattr(x, "detach") else x for x in args))
        # The backward's own operator, on the arguments the forward's formula gives it.
        bwd = self.op.backward
        b_args = self.op.pairing.backward_args(self.op.pairing.saved(ins, [None] * 3), grads, lambda j, g, t: g)
        opcheck(bwd._overload, tuple(b_args) + (True,))


@unittest.skipIf(gpu_skip_reason(), gpu_skip_reason() or "")
class OpcheckTest(unittest.TestCase):
    def test_rowwise_cast(self):
        opcheck = getattr(torch.library, "opcheck", None)
        if opcheck is None:
            self.skipTest("torch %s has no torch.library.opcheck" % torch.__version__)
        from fp8gen_torch import driver, load
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "rowwise_cast")
            rc, out = export("rowwise_cast", driver.device_target(torch.cuda.current_device()), "M=40,K=72", [], d)
            if rc != 0 and no_compiler(out):
                self.skipTest(out.strip())
            self.assertEqual(rc, 0, out)
            op = load(d)
            x = torch.randn(40, 72, device="cuda").bfloat16()
            opcheck(op._overload, (x, True))
            # The direct eager path and the operator: the same bits.
            for a, b in zip(op(x), op._overload(x, True)):
                self.assertEqual(raw(a), raw(b))


@unittest.skipUnless(FP8GEN, "set FP8GEN to the fp8gen CLI binary")
class NpyThroughInterpreterTest(unittest.TestCase):
    """The test's .npy writer and reader against fp8gen's (no torch, no
    GPU): inputs written here run in Go's CPU interpreter, and its outputs
    read back have the manifest's dtypes and shapes."""

    def test_rowwise_and_grouped(self):
        rnd = random.Random(7)
        with tempfile.TemporaryDirectory() as tmp:
            for op, shape, target in [("rowwise_cast", "M=7,K=33", "sm_90"),
                                      ("grouped_colwise_cast", "T=130,K=17,E=4", "gfx942")]:
                with self.subTest(op=op):
                    d = os.path.join(tmp, op)
                    rc, out = export(op, target, shape, [], d, compile_="no")
                    self.assertEqual(rc, 0, out)
                    m = mf.load_manifest(d)
                    sizes = dict(m.shape)
                    args = ["run", op, "--device", "cpu", "--target", target, "--shape", shape]
                    for t in m.inputs:
                        dims = m.dims_at(t, sizes)
                        n = 1
                        for v in dims:
                            n *= v
                        if t.dtype == "bf16":  # the top half of a finite float32
                            data = b"".join(struct.pack("<H", struct.unpack("<I", struct.pack("<f", rnd.gauss(0, 3)))[0] >> 16)
                                            for _ in range(n))
                        elif t.name == "offsets":
                            cuts = sorted(rnd.randrange(sizes["T"] + 1) for _ in range(n - 1))
                            data = struct.pack("<%di" % n, *(cuts + [sizes["T"]]))
                        else:
                            self.fail("no generator for %s" % t.name)
                        p = os.path.join(tmp, "%s.%s.npy" % (op, t.name))
                        write_npy(p, NPY_DESCR[t.dtype], dims, data)
                        self.assertEqual(read_npy(p), (NPY_DESCR[t.dtype], dims, data))
                        args += ["--in", "%s=%s" % (t.name, p)]
                    outdir = os.path.join(tmp, op + "-out")
                    rc, log = fp8gen(*(args + ["--out", outdir]))
                    self.assertEqual(rc, 0, log)
                    self.assertIn("bit-exact", log)
                    for t in m.outputs:
                        descr, shp, data = read_npy(os.path.join(outdir, t.name + ".npy"))
                        dims = m.dims_at(t, sizes)
                        self.assertEqual((descr, shp), (NPY_DESCR[t.dtype], dims))
                        self.assertEqual(len(data), t.itemsize * m.check(sizes).elems[t.name])


if __name__ == "__main__":
    unittest.main()
