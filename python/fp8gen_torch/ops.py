"""Loaded ops: an fp8gen export as a PyTorch operator.

load(dir) reads the export, and registers it as the custom operator
fp8gen::<op>_<hash> (torch.library.custom_op, with a fake implementation
from the manifest's shape expressions, so torch.compile(fullgraph=True)
traces through it). load(dir, backward=bwd_dir) pairs a forward with its
backward export (grad.py): the operator then has an autograd formula
(register_autograd) that saves what the backward reads and calls the
backward's operator.

Calling an Op in eager mode launches directly, without the dispatcher: the
inputs are checked, the launch plan for their shapes and device is taken
from the cache (plan.py: made once per shape), the outputs and scratch are
allocated, and the kernels are launched on torch's current stream. Where
autograd needs a record (an input of a paired op requires grad) the call
goes through a torch.autograd.Function around that same path. Under
torch.compile, a dispatch mode (FakeTensorMode, a FlopCounter, make_fx),
torch.jit tracing, the profiler, a functorch transform (vmap, grad), or
with tensor subclasses, the call goes
through the registered operator instead, which runs the same launcher.
"""

import hashlib
import json
import keyword
import os
import threading

import torch
from torch.autograd.function import once_differentiable

from . import driver as drv
from . import grad as _grad
from .manifest import DTYPE_TABLE, ManifestError, load_manifest
from .plan import InputError, Launcher, Runtime, StatusError  # noqa: F401 (InputError, StatusError: the API)

# The manifest's dtype names as torch dtypes (attribute names: older torch
# builds lack the fnuz formats and e8m0, and only ops that use one need it).
TORCH_DTYPES = {name: row[1] for name, row in DTYPE_TABLE.items()}


def torch_dtype(name):
    dt = getattr(torch, TORCH_DTYPES[name], None)
    if dt is None and name == "e8m0":
        return torch.uint8  # the same bytes, for a torch without float8_e8m0fnu
    if dt is None:
        raise ManifestError("dtype %s needs torch.%s, which this torch %s lacks"
                            % (name, TORCH_DTYPES[name], torch.__version__))
    return dt


# ---------------------------------------------------------------------------
# When a call takes the direct path

def _false():
    return False


# Dynamo folds torch.compiler.is_compiling() to True while it traces; in
# eager mode it is False.
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or _false
_grad_enabled = torch.is_grad_enabled
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None) or _false
_tracing = getattr(torch._C, "_get_tracing_state", None) or _false
_profiling = getattr(torch.autograd, "_profiler_enabled", None) or _false
# vmap, grad and the other functorch transforms wrap tensors the launcher
# cannot read the data pointers of: those calls take the operator.
_transforms = getattr(torch._C, "_are_functorch_transforms_active", None) or _false


class TorchRuntime(Runtime):
    """The Runtime of plan.Launcher on torch and the vendor's driver. What a
    call at a planned shape uses is bound here once: torch.empty, torch's
    current device and raw current stream (C functions, no Stream object),
    the driver's launch and memset functions. The driver is opened when the
    first plan is made."""

    device_types = ("cuda",)

    def __init__(self, functions):
        self.plain_types = frozenset([torch.Tensor, torch.nn.Parameter])
        self.tensor_type = torch.Tensor
        self.u8 = torch.uint8
        self.empty = torch.empty
        self.current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self.raw_stream = raw or (lambda index: torch.cuda.current_stream(index).cuda_stream)
        self.functions = functions
        self._devices = {}

    @property
    def launch(self):
        return drv.driver().launch_fn

    @property
    def memsets(self):
        return drv.driver().memset_fns

    @property
    def retry_codes(self):
        return drv.driver().retry_codes

    def device(self, index):
        d = self._devices.get(index)
        if d is None:
            d = self._devices[index] = torch.device("cuda", index)
        return d

    def guard(self, index):
        return torch.cuda.device(index)

    def enter(self, index):
        return drv.driver().enter(index)

    def leave(self, prev):
        drv.driver().leave(prev)

    def check(self, rc, what):
        drv.driver().check(rc, what)

    def check_grid(self, grid, block, symbol):
        drv.driver().check_grid(grid, block, symbol)

    def fill(self, scratch, off, nbytes, t):
        # An init no memset writes (an FP8 value but zero, say).
        dt = torch_dtype(t.dtype)
        view = scratch[off:off + nbytes].view(dt)
        if t.dtype in ("i32", "i64"):
            view.fill_(int(t.init))
        elif t.dtype in ("f32", "bf16"):
            view.fill_(float(t.init))
        else:  # fp8: fill in f32 and convert (fill_ may not take fp8)
            view.copy_(torch.full(view.shape, float(t.init), dtype=torch.float32, device=scratch.device).to(dt))

    def read_words(self, scratch, off, nbytes, dtype):
        return scratch[off:off + nbytes].view(dtype).tolist()


# ---------------------------------------------------------------------------
# Registration

# Registered operators by qualified name, and the Op each one runs: a name
# is defined once per process; loading the same variant again reuses it
# (and the newest Op serves it: the same kernels, the same checks; the
# status check is an argument of each call, not the Op's state).
_DEFS = {}
_IMPLS = {}
_REG_LOCK = threading.Lock()


def _variant_key(m):
    return [m.op, m.target.name, [k.symbol for k in m.kernels],
            [[t.name, t.role, t.dtype, [d.src for d in t.shape]] for t in m.tensors], m.source.sha256]


def _variant_name(m, backward=None):
    """<op>_<hash>: the hash covers what makes the variant — the target,
    the kernels' symbols (which carry a hash of their code), the tensors'
    roles, dtypes and shapes, the source, and for a paired op its
    backward's — so different exports never share an operator and the same
    one always gets the same name."""
    key = _variant_key(m) + ([_variant_key(backward)] if backward is not None else [])
    return "%s_%s" % (m.op, hashlib.sha256(json.dumps(key, separators=(",", ":")).encode()).hexdigest()[:16])


def _schema(m):
    def arg(n):
        # Positional only in practice; a keyword would not parse as a name.
        return n + "_" if keyword.iskeyword(n) or n in ("self", "out") else n
    ins = ", ".join(["Tensor " + arg(t.name) for t in m.inputs] + ["bool fp8gen_check_status"])
    outs = "Tensor" if len(m.outputs) == 1 else "(" + ", ".join(["Tensor"] * len(m.outputs)) + ")"
    return "(%s) -> %s" % (ins, outs)


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _register(op):
    name = _variant_name(op.manifest, op.backward.manifest if op.backward is not None else None)
    qual = "fp8gen::" + name
    single = len(op.manifest.outputs) == 1
    with _REG_LOCK:
        _IMPLS[qual] = op
        if qual not in _DEFS:
            def impl(*args):
                outs = _IMPLS[qual]._launcher.call(args[:-1], args[-1])
                return outs[0] if single else outs

            def fake(*args):
                return _IMPLS[qual]._fake(args[:-1])

            impl.__name__ = fake.__name__ = name
            d = torch.library.custom_op(qual, impl, mutates_args=(), schema=_schema(op.manifest))
            d.register_fake(fake)
            if op.backward is not None:
                def setup_context(ctx, inputs, output):
                    _save(ctx, _IMPLS[qual], inputs[:-1], _as_tuple(output))
                    ctx.fp8gen_check_status = inputs[-1]

                def backward(ctx, *grads):
                    o = _IMPLS[qual]
                    bwd = o.backward._overload
                    check = ctx.fp8gen_check_status
                    n = len(o.manifest.inputs)
                    return _backward(o, ctx, grads, ctx.needs_input_grad[:n],
                                     lambda args: _as_tuple(bwd(*args, check))) + (None,)

                d.register_autograd(backward, setup_context=setup_context)
            _DEFS[qual] = d
    return qual, getattr(torch.ops.fp8gen, name).default


# ---------------------------------------------------------------------------
# Autograd: what the forward saves, and the backward's call

def _save(ctx, op, inputs, outputs):
    """Save what the backward export reads of the forward's tensors
    (Pairing.saved) and the outputs' shapes (a gradient autograd leaves
    undefined is zeros of that shape)."""
    ctx.save_for_backward(*op.pairing.saved(inputs, outputs))
    ctx.fp8gen_out_shapes = tuple(o.shape for o in outputs)


def _backward(op, ctx, grads, needs, call_bwd):
    """The forward inputs' gradients: the backward export's inputs put
    together from the saved tensors and the outputs' gradients (made
    contiguous, in the backward's dtype), its outputs cast to the inputs'
    dtypes; None where no gradient is needed or the op gives none."""
    p, bwd = op.pairing, op.backward
    if not any(needs[i] for i in p.differentiable):
        return (None,) * len(p.input_grads)
    saved = ctx.saved_tensors
    device = saved[0].device if saved else None

    def grad_arg(j, g, t):
        want = bwd.dtypes[t.name]
        if g is None:
            return torch.zeros(ctx.fp8gen_out_shapes[j], dtype=want, device=device)
        if g.dtype != want:
            g = g.to(want)
        if not g.is_contiguous():
            g = g.contiguous()  # an expanded gradient (of a sum, say): the kernels read row-major
        return g

    res = call_bwd(p.backward_args(saved, grads, grad_arg))
    out = p.input_gradients(res, needs)
    return tuple(g if g is None or g.dtype == want else g.to(want) for g, want in zip(out, op.in_dtypes))


class _EagerGrad(torch.autograd.Function):
    """A paired op in eager mode with an input that requires grad: the
    launcher's path forward and backward, recorded for autograd."""

    @staticmethod
    def forward(ctx, op, *args):
        outs = op._launcher.call(args, op.check_status)
        _save(ctx, op, args, outs)
        ctx.fp8gen_op = op
        return outs

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        op = ctx.fp8gen_op
        bwd = op.backward._launcher.call
        check = op.check_status
        return (None,) + _backward(op, ctx, grads, ctx.needs_input_grad[1:], lambda args: bwd(args, check))


# ---------------------------------------------------------------------------


class Op:
    """One exported op. Call it with the input tensors, positionally in the
    manifest's order or by name; it returns the outputs as a tuple in the
    manifest's order (call_dict: a dict by name).

    Every call checks each input's dtype, device (CUDA/ROCm, all on one) and
    contiguity. At a shape not seen before it infers the sizes from the
    dimensions that are a size alone, holds them to the export's class
    (Manifest.check) and each input's full shape to them, and keeps the
    launch plan; a shape seen before takes it from the cache. With
    check_status (the default), an op with a status word reads it after the
    kernels: that synchronizes the stream, and a nonzero word raises
    StatusError. Pass check_status=False to keep the call asynchronous (and
    capturable in a CUDA graph), at the price of not hearing of bad input.

    With backward (an Op of the backward export), the op is differentiable
    in the inputs the backward gives gradients of: eager calls record a
    torch.autograd.Function, and the registered operator has an autograd
    formula, which torch.compile traces.
    """

    def __init__(self, manifest, check_status=True, sizes=None, backward=None):
        m = self.manifest = manifest
        if not m.inputs:
            raise ManifestError("%s: no input tensors: nothing to infer the sizes from" % m.op)
        self.name = m.op
        self.check_status = check_status
        self.input_names = [t.name for t in m.inputs]
        self.output_names = [t.name for t in m.outputs]
        self.dtypes = {t.name: torch_dtype(t.dtype) for t in m.tensors}
        self.in_dtypes = tuple(self.dtypes[n] for n in self.input_names)
        self._modules = {}  # device index -> (module, [function per kernel])
        self._lock = threading.Lock()
        self._launcher = Launcher(m, self.dtypes, TorchRuntime(self._kernels), sizes)
        self.given_sizes, self.fixed_sizes = self._launcher.given_sizes, self._launcher.fixed_sizes
        self._call = self._launcher.call
        self._n_in = len(m.inputs)
        self.backward = backward
        self.pairing = _grad.pair(m, backward.manifest) if backward is not None else None
        self._grad_inputs = self.pairing.differentiable if self.pairing is not None else ()
        self.qualname, self._overload = _register(self)

    def __repr__(self):
        return "<fp8gen op %s for %s (%s)>" % (self.name, self.manifest.target.name, self.qualname)

    @property
    def plans(self):
        """The cached launch plans, by (shape, device index) of each input."""
        return self._launcher.plans

    # -- calling -----------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != self._n_in:
            args = self._bind(args, kwargs)
        if _is_compiling():
            return _as_tuple(self._overload(*args, self.check_status))
        if self._grad_inputs and _grad_enabled():
            try:
                if any(args[i].requires_grad for i in self._grad_inputs):
                    if _dispatch_modes() or _tracing() or _transforms():
                        return _as_tuple(self._overload(*args, self.check_status))
                    return _EagerGrad.apply(self, *args)
            except AttributeError:
                pass  # not a tensor: the launcher names it
        if _dispatch_modes() or _tracing() or _profiling() or _transforms():
            return _as_tuple(self._overload(*args, self.check_status))
        return self._call(args, self.check_status, self._dispatch)

    def _dispatch(self, args, check_status):
        # Tensor subclasses: the registered operator (their dispatch rules,
        # the fake implementation for FakeTensors).
        return _as_tuple(self._overload(*args, check_status))

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
        return tuple(given[n] for n in names)

    # -- the fake (shapes only, for torch.compile) ------------------------

    def _fake(self, tensors):
        outs = tuple(tensors[0].new_empty(d, dtype=dt) for d, dt in self._launcher.fake_outputs(tensors))
        return outs if len(outs) > 1 else outs[0]

    # -- the kernels ---------------------------------------------------------

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


def load(folder, check_status=True, sizes=None, backward=None):
    """The export in folder (fp8gen export OP --target T -o folder) as an Op.
    The manifest and its files' SHA-256s are checked now; the code object is
    loaded on the first call on each device (compiled from the source there
    if the export holds none for that device's architecture).

    backward: the folder of the op's backward export (fp8gen export OP_bwd
    with the same target and options): the Op is then differentiable (see
    Op). sizes and check_status apply to both."""
    bwd = None
    if backward is not None:
        bm = load_manifest(_find_export(backward))
        bwd = Op(bm, check_status=check_status, sizes={k: v for k, v in (sizes or {}).items() if k in bm.size_names})
    return Op(load_manifest(_find_export(folder)), check_status=check_status, sizes=sizes, backward=bwd)
