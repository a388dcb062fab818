"""Loaded ops: an fp8gen export as a PyTorch operator.

load(dir) reads the export, and registers it as the custom operator
fp8gen::<op>_<hash> (torch.library.custom_op, with a fake implementation
from the manifest's shape expressions, so torch.compile(fullgraph=True)
traces through it). Calling the op checks the inputs, holds the shape to
the export's class, allocates the outputs and the scratch, and launches the
kernels in order on torch's current stream.
"""

import ctypes
import hashlib
import json
import keyword
import os
import threading

import torch

from . import driver as drv
from .manifest import INT32_MAX, INT64_MAX, ManifestError, ShapeError, load_manifest

# The manifest's dtype names as torch dtypes (attribute names: older torch
# builds lack the fnuz formats, and only ops that use one need it).
TORCH_DTYPES = {
    "f32": "float32", "bf16": "bfloat16", "i32": "int32", "i64": "int64",
    "e4m3fn": "float8_e4m3fn", "e4m3fnuz": "float8_e4m3fnuz",
    "e5m2": "float8_e5m2", "e5m2fnuz": "float8_e5m2fnuz",
}


class InputError(ValueError):
    """A call's tensors do not fit the manifest (device, layout)."""


class StatusError(RuntimeError):
    """The kernels found bad input on the device and set a status word."""


def torch_dtype(name):
    dt = getattr(torch, TORCH_DTYPES[name], None)
    if dt is None:
        raise ManifestError("dtype %s needs torch.%s, which this torch %s lacks"
                            % (name, TORCH_DTYPES[name], torch.__version__))
    return dt


# Registered operators by qualified name, and the Op each one runs: a name
# is defined once per process; loading the same variant again reuses it
# (and the newest Op serves it: the same kernels, the same checks; the
# status check is an argument of each call, not the Op's state).
_DEFS = {}
_IMPLS = {}
_REG_LOCK = threading.Lock()


def _variant_name(m):
    """<op>_<hash>: the hash covers what makes the variant — the target,
    the kernels' symbols (which carry a hash of their code), the tensors'
    roles, dtypes and shapes, the source — so different exports never share
    an operator and the same one always gets the same name."""
    key = json.dumps([m.op, m.target.name, [k.symbol for k in m.kernels],
                      [[t.name, t.role, t.dtype, [d.src for d in t.shape]] for t in m.tensors],
                      m.source.sha256], separators=(",", ":"))
    return "%s_%s" % (m.op, hashlib.sha256(key.encode()).hexdigest()[:16])


def _schema(m):
    def arg(n):
        # Positional only in practice; a keyword would not parse as a name.
        return n + "_" if keyword.iskeyword(n) or n in ("self", "out") else n
    ins = ", ".join(["Tensor " + arg(t.name) for t in m.inputs] + ["bool fp8gen_check_status"])
    outs = "Tensor" if len(m.outputs) == 1 else "(" + ", ".join(["Tensor"] * len(m.outputs)) + ")"
    return "(%s) -> %s" % (ins, outs)


def _register(op):
    name = _variant_name(op.manifest)
    qual = "fp8gen::" + name
    with _REG_LOCK:
        _IMPLS[qual] = op
        if qual not in _DEFS:
            def impl(*args):
                return _IMPLS[qual]._run(args[:-1], check_status=args[-1])

            def fake(*args):
                return _IMPLS[qual]._fake(args[:-1])

            impl.__name__ = fake.__name__ = name
            d = torch.library.custom_op(qual, impl, mutates_args=(), schema=_schema(op.manifest))
            d.register_fake(fake)
            _DEFS[qual] = d
    return qual, getattr(torch.ops.fp8gen, name).default


class Op:
    """One exported op. Call it with the input tensors, positionally in the
    manifest's order or by name; it returns the outputs as a tuple in the
    manifest's order (call_dict: a dict by name).

    Every call checks each input's dtype, device (CUDA/ROCm, all on one),
    contiguity and shape; infers the sizes from the dimensions that are a
    size alone; holds them to the export's class (Manifest.check). With
    check_status (the default), an op with a status word reads it after the
    kernels: that synchronizes the stream, and a nonzero word raises
    StatusError. Pass check_status=False to keep the call asynchronous (and
    capturable in a CUDA graph), at the price of not hearing of bad input.
    """

    def __init__(self, manifest, check_status=True, sizes=None):
        m = self.manifest = manifest
        if not m.inputs:
            raise ManifestError("%s: no input tensors: nothing to infer the sizes from" % m.op)
        self.name = m.op
        self.check_status = check_status
        inferable = {d.plain_name for t in m.inputs for d in t.shape if d.plain_name}
        sizes = dict(sizes or {})
        for n, v in sizes.items():
            if n not in m.size_names:
                raise ShapeError("%s: load(sizes=): %r is no size of the op (its sizes: %s)"
                                 % (m.op, n, ", ".join(m.size_names)))
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ShapeError("%s: load(sizes=): %s=%r must be an int >= 1" % (m.op, n, v))
        self.fixed_sizes = {n: m.shape[n] for n in m.size_names if n not in inferable and n in m.shape}
        self.fixed_sizes.update(sizes)
        self.given_sizes = sizes
        self.input_names = [t.name for t in m.inputs]
        self.output_names = [t.name for t in m.outputs]
        self.dtypes = {t.name: torch_dtype(t.dtype) for t in m.tensors}
        self._plans = {}
        self._modules = {}  # device index -> (module, [function per kernel])
        self._lock = threading.Lock()
        self.qualname, self._overload = _register(self)

    def __repr__(self):
        return "<fp8gen op %s for %s (%s)>" % (self.name, self.manifest.target.name, self.qualname)

    # -- calling -----------------------------------------------------------

    def __call__(self, *args, **kwargs):
        out = self._overload(*self._bind(args, kwargs), self.check_status)
        return out if isinstance(out, tuple) else (out,)

    def call_dict(self, *args, **kwargs):
        return dict(zip(self.output_names, self(*args, **kwargs)))

    def _bind(self, args, kwargs):
        names = self.input_names
        if len(args) > len(names):
            raise TypeError("%s takes %d inputs (%s), got %d" % (self.name, len(names), ", ".join(names), len(args)))
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError("%s has no input %s (inputs: %s)" % (self.name, k, ", ".join(names)))
            if k in given:
                raise TypeError("%s: input %s given twice" % (self.name, k))
            given[k] = v
        missing = [n for n in names if n not in given]
        if missing:
            raise TypeError("%s: input %s missing" % (self.name, ", ".join(missing)))
        return [given[n] for n in names]

    # -- checks ------------------------------------------------------------

    def infer_sizes(self, tensors):
        """The sizes, from the input dimensions whose expression is a size
        alone; ShapeError if one conflicts or cannot be inferred."""
        m = self.manifest
        sizes, where = {}, {}
        for t, x in zip(m.inputs, tensors):
            if x.dim() != len(t.shape):
                raise ShapeError("%s: input %s has shape %s; want %d dimensions [%s]"
                                 % (m.op, t.name, tuple(x.shape), len(t.shape), ", ".join(d.src for d in t.shape)))
            for i, d in enumerate(t.shape):
                n = d.plain_name
                if n is None:
                    continue
                v = x.shape[i]
                if n in sizes and sizes[n] != v:
                    raise ShapeError("%s: size %s is %s by input %s but %s by %s"
                                     % (m.op, n, v, t.name, sizes[n], where[n]))
                sizes[n], where[n] = v, "%s (dimension %d)" % (t.name, i)
        # A size no input dimension gives alone (qk_norm_rope's HQ, HKV sit only in
        # (HQ + 2 * HKV) * D): the caller's (load(..., sizes=)), else the export's
        # own shape; _plan_for still holds every input's full shape to it.
        for n in m.size_names:
            if n not in sizes and n in self.fixed_sizes:
                sizes[n], where[n] = self.fixed_sizes[n], "load(sizes=) or the export's shape"
            elif n in self.given_sizes and sizes.get(n) != self.given_sizes[n]:
                raise ShapeError("%s: size %s is %s by %s but %s by load(sizes=)"
                                 % (m.op, n, sizes.get(n), where.get(n), self.given_sizes[n]))
        missing = [n for n in m.size_names if n not in sizes]
        if missing:
            raise ShapeError("%s: size %s cannot be inferred: no input dimension is that size alone"
                             % (m.op, ", ".join(missing)))
        return sizes

    def plan(self, sizes):
        """Manifest.check at sizes, plus what this launcher needs (cached)."""
        key = tuple(sizes[n] for n in self.manifest.size_names)
        p = self._plans.get(key)
        if p is not None:
            return p
        m = self.manifest
        p = m.check(dict(sizes))
        for k, g in zip(m.kernels, p.grids):
            if 0 in g:
                raise ShapeError("%s: kernel %s: grid %s at %s has an empty axis" % (m.op, k.symbol, g, sizes))
            for prm in k.params:
                if prm.kind == "size" and sizes[prm.name] > (INT32_MAX if prm.dtype == "i32" else INT64_MAX):
                    raise ShapeError("%s: kernel %s takes %s as %s; %d does not fit"
                                     % (m.op, k.symbol, prm.name, prm.dtype, sizes[prm.name]))
        if len(self._plans) > 1024:
            self._plans.clear()
        self._plans[key] = p
        return p

    def _check_inputs(self, tensors, fake=False):
        m = self.manifest
        device = None
        # The fake runs on FakeTensors (their device is the real one's) or
        # on meta tensors, when someone propagates shapes by hand.
        devices = ("cuda", "meta") if fake else ("cuda",)
        for t, x in zip(m.inputs, tensors):
            if not isinstance(x, torch.Tensor):
                raise TypeError("%s: input %s is %s, not a tensor" % (m.op, t.name, type(x).__name__))
            if x.dtype != self.dtypes[t.name]:
                raise TypeError("%s: input %s is %s; want %s (%s)" % (m.op, t.name, x.dtype, self.dtypes[t.name], t.dtype))
            if x.device.type not in devices:
                raise InputError("%s: input %s is on %s; want a CUDA/ROCm device" % (m.op, t.name, x.device))
            if device is None:
                device = x.device
            elif x.device != device:
                raise InputError("%s: input %s is on %s, another input on %s" % (m.op, t.name, x.device, device))
            if not x.is_contiguous():
                raise InputError("%s: input %s is not contiguous (strides %s): the kernels read it row-major; "
                                 "pass .contiguous()" % (m.op, t.name, tuple(x.stride())))
        sizes = self.infer_sizes(tensors)
        return sizes, device

    def _prepare(self, tensors):
        """Every check of a real call; the plan and the device."""
        sizes, device = self._check_inputs(tensors)
        return self._plan_for(tensors, sizes), device

    def _plan_for(self, tensors, sizes):
        p = self.plan(sizes)
        for t, x in zip(self.manifest.inputs, tensors):
            if tuple(x.shape) != p.dims[t.name]:
                raise ShapeError("%s: input %s has shape %s; at %s it is %s"
                                 % (self.name, t.name, tuple(x.shape), _sizes_str(sizes), p.dims[t.name]))
        return p

    # -- the fake (shapes only, for torch.compile) ------------------------

    def _fake(self, tensors):
        sizes, _ = self._check_inputs(tensors, fake=True)
        if all(type(v) is int for v in sizes.values()):
            p = self._plan_for(tensors, sizes)
            dims = [p.dims[t.name] for t in self.manifest.outputs]
        else:
            # Symbolic sizes (dynamic shapes): a dimension that is a size
            # stays symbolic; any other is evaluated, specializing its sizes.
            # The real call checks the shape in full.
            concrete = {k: int(v) for k, v in sizes.items()}
            dims = [[sizes[d.plain_name] if d.plain_name else d.eval(concrete) for d in t.shape]
                    for t in self.manifest.outputs]
        x = tensors[0]
        outs = tuple(x.new_empty(d, dtype=self.dtypes[t.name]) for t, d in zip(self.manifest.outputs, dims))
        return outs if len(outs) > 1 else outs[0]

    # -- the real call -----------------------------------------------------

    def _kernels(self, index):
        """The kernels' functions on device index, loading the module once:
        from the code object if it is for this device's architecture, else
        compiled from the source."""
        with self._lock:
            got = self._modules.get(index)
            if got is not None:
                return got[1]
            m = self.manifest
            vendor, arch = drv.vendor(), drv.device_target(index)
            if m.target.vendor != vendor or m.target.name != arch:
                raise drv.DeviceError("%s: this export is for %s (%s, %s); device %d is %s (%s): export the op for %s"
                                      % (m.op, m.target.name, m.target.product, m.target.vendor, index, arch, vendor, arch))
            if m.code_object is not None and m.code_object.arch == arch:
                image = m.code_object_bytes
            else:
                # None, or a stand-in of the family (gfx940 for gfx942).
                image = drv.compile_source(m.source_bytes, m.source.file, vendor, arch, m.compile_flags)
            d = drv.driver()
            prev = d.enter(index)
            try:
                mod = d.load(image)
                fns = []
                for k in m.kernels:
                    fn = d.function(mod, k.symbol)
                    d.allow_dynamic_shared(fn, k.dynamic_lds_bytes, k.symbol)
                    fns.append(fn)
            finally:
                d.leave(prev)
            self._modules[index] = (mod, fns)  # the module stays loaded for the process
            return fns

    def _scratch(self, t, dims, device):
        dt = self.dtypes[t.name]
        if t.dtype in ("i32", "i64"):
            return torch.full(dims, int(t.init), dtype=dt, device=device)
        if t.dtype in ("f32", "bf16"):
            return torch.full(dims, float(t.init), dtype=dt, device=device)
        # fp8 scratch: fill in f32 and convert (fill_ may not take fp8).
        return torch.full(dims, float(t.init), dtype=torch.float32, device=device).to(dt)

    def _run(self, tensors, check_status=True):
        m = self.manifest
        p, device = self._prepare(tensors)
        index = device.index if device.index is not None else torch.cuda.current_device()
        with torch.cuda.device(index):
            fns = self._kernels(index)
            stream = torch.cuda.current_stream(index).cuda_stream
            bufs = dict(zip(self.input_names, tensors))
            outs = []
            for t in m.outputs:  # every element is written by the kernels
                bufs[t.name] = torch.empty(p.dims[t.name], dtype=self.dtypes[t.name], device=device)
                outs.append(bufs[t.name])
            for t in m.scratch:  # filled on this stream, before the first kernel
                bufs[t.name] = self._scratch(t, p.dims[t.name], device)
            d = drv.driver()
            prev = d.enter(index)
            try:
                for k, fn, grid in zip(m.kernels, fns, p.grids):
                    vals = []
                    for prm in k.params:
                        if prm.kind == "tensor":
                            vals.append(ctypes.c_void_p(bufs[prm.name].data_ptr()))
                        elif prm.dtype == "i32":
                            vals.append(ctypes.c_int32(p.sizes[prm.name]))
                        else:
                            vals.append(ctypes.c_int64(p.sizes[prm.name]))
                    d.launch(fn, grid, k.block, k.dynamic_lds_bytes, stream, drv.pack_args(vals), k.symbol)
            finally:
                d.leave(prev)
        if check_status:
            for t in m.scratch:
                if t.status is None:
                    continue
                # .tolist() copies to the host: it waits for the kernels.
                bad = [v for v in bufs[t.name].reshape(-1).tolist() if v != 0]
                if bad:
                    raise StatusError("%s: at %s the kernels found bad input: status word %s = %s (%s); "
                                      "the outputs are not valid" % (m.op, _sizes_str(p.sizes), t.name, bad[0], t.status))
        return tuple(outs) if len(outs) > 1 else outs[0]


def _sizes_str(sizes):
    return ",".join("%s=%s" % (k, sizes[k]) for k in sorted(sizes))


def _find_export(folder):
    """folder itself, or, where it holds one export per target in
    subfolders, the one for the current device's target."""
    if os.path.exists(os.path.join(folder, "manifest.json")):
        return folder
    subs = sorted(e.path for e in os.scandir(folder)
                  if e.is_dir() and os.path.exists(os.path.join(e.path, "manifest.json"))) if os.path.isdir(folder) else []
    if not subs:
        raise ManifestError("%s: no manifest.json, and no subfolder holding one" % folder)
    if not torch.cuda.is_available():
        raise drv.DeviceError("%s holds exports for several targets; with no GPU there is none to pick" % folder)
    arch = drv.device_target(torch.cuda.current_device())
    targets = {}
    for s in subs:
        with open(os.path.join(s, "manifest.json"), "rb") as f:
            try:
                targets.setdefault(json.load(f).get("target", {}).get("name"), s)
            except (ValueError, AttributeError):
                continue
    if arch not in targets:
        raise drv.DeviceError("%s holds exports for %s; this device is %s"
                              % (folder, ", ".join(sorted(str(t) for t in targets)), arch))
    return targets[arch]


def load(folder, check_status=True, sizes=None):
    """The export in folder (fp8gen export OP --target T -o folder) as an Op.
    The manifest and its files' SHA-256s are checked now; the code object is
    loaded on the first call on each device (compiled from the source there
    if the export holds none for that device's architecture)."""
    return Op(load_manifest(_find_export(folder)), check_status=check_status, sizes=sizes)
