"""Launch plans: what a call of an export at one shape needs, worked out
once and kept, so that a call at a shape seen before does no manifest work.

A LaunchPlan holds, for one set of input shapes on one device: each
output's dims and dtype, the scratch's layout in one byte buffer and the
memsets that fill it with its init, and each kernel's launch arguments —
function handle, grid, block, shared bytes, and a kernelParams array that
points into one preallocated argument buffer. The sizes are written into
that buffer when the plan is made; a call writes only its tensors' device
pointers (one struct.pack_into) and launches.

A Launcher is the call path of one export: its inputs' checks, the plan
cache keyed by every input's shape and device, the launch. It reaches
torch and the driver only through a Runtime (ops.TorchRuntime on a GPU),
so this module needs no torch, and its tests run the whole call path on
stand-ins for tensors and for the driver.
"""

import ctypes
import struct
import threading

from .manifest import INT32_MAX, INT64_MAX, ShapeError

SCRATCH_ALIGN = 256  # each scratch tensor's offset in the call's scratch buffer
PLAN_CACHE_LIMIT = 256  # plans an export keeps; past it the cache starts over


class InputError(ValueError):
    """A call's tensors do not fit the manifest (device, layout)."""


class StatusError(RuntimeError):
    """The kernels found bad input on the device and set a status word."""


def sizes_str(sizes):
    return ",".join("%s=%s" % (k, sizes[k]) for k in sorted(sizes))


# ---------------------------------------------------------------------------
# Sizes from shapes


def infer_sizes(m, shapes, fixed=None, given=None):
    """The sizes of manifest m, from its inputs' shapes (tuples of ints, in
    the manifest's input order): a dimension whose expression is a size alone
    gives that size. A size no input gives alone (qk_norm_rope's HQ and HKV,
    which sit only in (HQ + 2 * HKV) * D) is taken from fixed (load(sizes=),
    else the export's own shape); a size in given (load(sizes=)) that the
    inputs contradict is an error. ShapeError if a size conflicts or cannot
    be inferred."""
    fixed = fixed or {}
    given = given or {}
    sizes, where = {}, {}
    for t, shape in zip(m.inputs, shapes):
        if len(shape) != len(t.shape):
            raise ShapeError("%s: input %s has shape %s; want %d dimensions [%s]"
                             % (m.op, t.name, tuple(shape), len(t.shape), ", ".join(d.src for d in t.shape)))
        for i, d in enumerate(t.shape):
            n = d.plain_name
            if n is None:
                continue
            v = shape[i]
            if n in sizes and sizes[n] != v:
                raise ShapeError("%s: size %s is %s by input %s but %s by %s"
                                 % (m.op, n, v, t.name, sizes[n], where[n]))
            sizes[n], where[n] = v, "%s (dimension %d)" % (t.name, i)
    for n in m.size_names:
        if n not in sizes and n in fixed:
            sizes[n], where[n] = fixed[n], "load(sizes=) or the export's shape"
        elif n in given and sizes.get(n) != given[n]:
            raise ShapeError("%s: size %s is %s by %s but %s by load(sizes=)"
                             % (m.op, n, sizes.get(n), where.get(n), given[n]))
    missing = [n for n in m.size_names if n not in sizes]
    if missing:
        raise ShapeError("%s: size %s cannot be inferred: no input dimension is that size alone"
                         % (m.op, ", ".join(missing)))
    return sizes


def fixed_sizes(m, sizes=None):
    """(given, fixed) for load(sizes=): given is sizes checked against the
    manifest; fixed adds, for each size no input dimension is alone, the
    export's own value (its class admits no other where the kernels are
    compiled for it, as qk_norm_rope's head counts)."""
    given = dict(sizes or {})
    for n, v in given.items():
        if n not in m.size_names:
            raise ShapeError("%s: load(sizes=): %r is no size of the op (its sizes: %s)"
                             % (m.op, n, ", ".join(m.size_names)))
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ShapeError("%s: load(sizes=): %s=%r must be an int >= 1" % (m.op, n, v))
    inferable = {d.plain_name for t in m.inputs for d in t.shape if d.plain_name}
    fixed = {n: m.shape[n] for n in m.size_names if n not in inferable and n in m.shape}
    fixed.update(given)
    return given, fixed


def check_plan(m, sizes):
    """Manifest.check at sizes, plus what a launch needs: no empty grid axis,
    every size parameter within its type."""
    p = m.check(dict(sizes))
    for k, g in zip(m.kernels, p.grids):
        if 0 in g:
            raise ShapeError("%s: kernel %s: grid %s at %s has an empty axis" % (m.op, k.symbol, g, sizes_str(sizes)))
        for prm in k.params:
            if prm.kind == "size" and sizes[prm.name] > (INT32_MAX if prm.dtype == "i32" else INT64_MAX):
                raise ShapeError("%s: kernel %s takes %s as %s; %d does not fit"
                                 % (m.op, k.symbol, prm.name, prm.dtype, sizes[prm.name]))
    return p


# ---------------------------------------------------------------------------
# Kernel arguments, the plain way: one ctypes object per argument


def pack_args(values):
    """kernelParams for a launch: an array holding a pointer to each
    argument's value. values are ctypes objects (c_void_p for a tensor's
    data pointer, c_int32 / c_int64 for a size); the caller keeps them
    alive until the launch returns (the driver copies them then)."""
    arr = (ctypes.c_void_p * max(len(values), 1))()
    for i, v in enumerate(values):
        arr[i] = ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
    return arr


def arg_values(kernel, sizes, pointers):
    """A kernel's arguments as ctypes objects, in its params' order:
    pointers maps a tensor's name to its device address."""
    vals = []
    for prm in kernel.params:
        if prm.kind == "tensor":
            vals.append(ctypes.c_void_p(pointers[prm.name]))
        elif prm.dtype == "i32":
            vals.append(ctypes.c_int32(sizes[prm.name]))
        else:
            vals.append(ctypes.c_int64(sizes[prm.name]))
    return vals


PARAM_BYTES = {"tensor": 8, "i32": 4, "i64": 8}


def param_bytes(kernel, params):
    """The bytes each kernelParams entry points at, each as wide as its
    parameter (what the driver copies at a launch)."""
    out = []
    for i, prm in enumerate(kernel.params):
        n = PARAM_BYTES["tensor" if prm.kind == "tensor" else prm.dtype]
        out.append(ctypes.string_at(params[i], n))
    return out


# ---------------------------------------------------------------------------
# Scratch init as memsets


def init_bytes(t):
    """One element of scratch tensor t's init value in its dtype, little
    endian; None where this module does not encode it (an FP8 value other
    than zero, a value past the f32 range): the Runtime's fill then writes
    it."""
    v = t.init
    try:
        if t.dtype == "f32":
            return struct.pack("<f", v)
        if t.dtype == "bf16":
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            if bits & 0x7FFFFFFF > 0x7F800000:
                return struct.pack("<H", (bits >> 16) | 0x40)  # a NaN stays a NaN
            bits += 0x7FFF + ((bits >> 16) & 1)  # to nearest, ties to even, as torch converts
            return struct.pack("<H", bits >> 16)
        if t.dtype in ("i32", "i64"):
            return int(v).to_bytes(4 if t.dtype == "i32" else 8, "little", signed=True)
    except (OverflowError, struct.error):
        return None
    return b"\x00" if v == 0 else None  # an FP8 format: zero is 0x00 in all four


def _memset_of(pattern, nbytes):
    """(width, value, count) of a memset writing pattern over nbytes, or None."""
    if len(set(pattern)) == 1:
        return 1, pattern[0], nbytes
    n = len(pattern)
    if n == 8 and pattern[:4] == pattern[4:]:
        pattern, n = pattern[:4], 4
    if n in (2, 4):
        return n, int.from_bytes(pattern, "little"), nbytes // n
    return None


def scratch_layout(m, elems):
    """The scratch tensors in one buffer: (offsets, total bytes, memsets,
    fills). memsets are (width, value, offset, count, name), adjacent
    byte-wide ones of one value merged (the padding between them is the
    buffer's own); fills are (offset, nbytes, tensor) for inits a memset
    cannot write."""
    offsets, memsets, fills = [], [], []
    end = 0
    for t in m.scratch:
        off = -(-end // SCRATCH_ALIGN) * SCRATCH_ALIGN
        nbytes = elems[t.name] * t.itemsize
        offsets.append(off)
        end = off + nbytes
        pat = init_bytes(t)
        ms = None if pat is None else _memset_of(pat, nbytes)
        if ms is None:
            fills.append((off, nbytes, t))
            continue
        width, value, count = ms
        if memsets and width == 1 and memsets[-1][0] == 1 and memsets[-1][1] == value:
            w, v, o, c, name = memsets[-1]
            memsets[-1] = (1, value, o, off + nbytes - o, name + "+" + t.name)
        else:
            memsets.append((width, value, off, count, t.name))
    return tuple(offsets), end, tuple(memsets), tuple(fills)


# ---------------------------------------------------------------------------
# One shape's plan


class LaunchPlan:
    """Everything a call at one shape on one device needs (see the module
    doc). Built from the manifest once; run() writes the call's pointers
    and issues the memsets and kernels.

    The argument buffer is shared by the plan's calls: run() holds the
    plan's lock from writing the pointers to the last launch (a ctypes
    call lets other threads run; the driver has copied the arguments when
    a launch returns)."""

    def __init__(self, m, sizes, checked, functions, launch, memsets, index=None, device=None, dtypes=None):
        self.op = m.op
        self.sizes = dict(sizes)
        self.index, self.device = index, device
        dtypes = dtypes or {}
        self.input_dims = tuple(checked.dims[t.name] for t in m.inputs)
        self.outputs = tuple((checked.dims[t.name], dtypes.get(t.name)) for t in m.outputs)
        self.output_names = tuple(t.name for t in m.outputs)
        # One 8-byte slot per tensor (inputs, outputs, scratch: the order
        # run() takes pointers in), then one per size argument; an i32 is
        # the low half of its slot (every target is little endian).
        buffers = [t.name for t in m.inputs] + [t.name for t in m.outputs] + [t.name for t in m.scratch]
        slot = {n: i for i, n in enumerate(buffers)}
        size_vals = []
        for k in m.kernels:
            for prm in k.params:
                if prm.kind == "size" and (prm.name, prm.dtype) not in slot:
                    slot[(prm.name, prm.dtype)] = len(buffers) + len(size_vals)
                    size_vals.append(sizes[prm.name])
        self.n_pointers = len(buffers)
        self.storage = (ctypes.c_uint64 * max(len(buffers) + len(size_vals), 1))()
        for i, v in enumerate(size_vals):
            self.storage[len(buffers) + i] = v
        self.pack_into = struct.Struct("<%dQ" % len(buffers)).pack_into
        base = ctypes.addressof(self.storage)
        kernels = []
        self.params = []
        for k, fn, grid in zip(m.kernels, functions, checked.grids):
            slots = [slot[p.name] if p.kind == "tensor" else slot[(p.name, p.dtype)] for p in k.params]
            params = (ctypes.c_void_p * max(len(slots), 1))(*[base + 8 * s for s in slots])
            self.params.append(params)
            kernels.append((fn, grid[0], grid[1], grid[2], k.block[0], k.block[1], k.block[2],
                            k.dynamic_lds_bytes, params, k.symbol))
        self.kernels = tuple(kernels)
        self.launch = launch
        offsets, self.scratch_bytes, ms, self.fills = scratch_layout(m, checked.elems)
        self.scratch_offsets = offsets
        self.memsets = tuple((memsets[w], v, off, count, "memset of scratch " + name) for w, v, off, count, name in ms)
        self.status = tuple((t.name, off, checked.elems[t.name] * t.itemsize, dtypes.get(t.name), t.status)
                            for t, off in zip(m.scratch, offsets) if t.status is not None)
        self.lock = threading.Lock()

    def pointers(self, inputs, outputs, scratch_base):
        """The device addresses run() takes: inputs' and outputs' data
        pointers, then each scratch tensor's in the scratch buffer."""
        ptrs = [x.data_ptr() for x in inputs]
        ptrs += [o.data_ptr() for o in outputs]
        if self.scratch_offsets:
            ptrs += [scratch_base + o for o in self.scratch_offsets]
        return ptrs

    def run(self, ptrs, scratch_base, stream):
        """Write ptrs into the argument buffer, issue the memsets and the
        kernels on stream. None, or (rc, what, issued) for the first driver
        call that failed, issued the calls before it that went through."""
        with self.lock:
            self.pack_into(self.storage, 0, *ptrs)
            issued = 0
            for fn, value, off, count, what in self.memsets:
                rc = fn(scratch_base + off, value, count, stream)
                if rc:
                    return rc, what, issued
                issued += 1
            launch = self.launch
            for k in self.kernels:
                rc = launch(k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], stream, k[8], None)
                if rc:
                    return rc, "launch of " + k[9], issued
                issued += 1
        return None


# ---------------------------------------------------------------------------
# The call path


class Runtime:
    """What a Launcher needs of torch and of the driver (ops.TorchRuntime is
    the real one; the tests have stand-ins).

    Attributes: plain_types (the tensor types of the fast path), tensor_type
    (isinstance check), device_types (accepted device.type values), u8 (the
    byte dtype), launch and memsets ({1, 2, 4: function}) with the driver's
    signatures, retry_codes (driver codes after which a call is issued again
    inside the device's context). Methods below."""

    plain_types = ()
    tensor_type = object
    device_types = ("cuda",)
    u8 = None
    launch = None
    memsets = None
    retry_codes = ()

    def empty(self, dims, dtype=None, device=None):
        raise NotImplementedError

    def device(self, index):
        raise NotImplementedError

    def current_device(self):
        raise NotImplementedError

    def raw_stream(self, index):
        raise NotImplementedError

    def functions(self, index):
        """The export's kernels' handles on device index (loading once)."""
        raise NotImplementedError

    def enter(self, index):
        """Make device index current for the driver; what leave() restores."""
        return None

    def leave(self, prev):
        pass

    def guard(self, index):
        """A context manager making index the framework's current device."""
        raise NotImplementedError

    def check(self, rc, what):
        raise NotImplementedError

    def check_grid(self, grid, block, symbol):
        pass

    def fill(self, scratch, off, nbytes, tensor):
        raise NotImplementedError

    def read_words(self, scratch, off, nbytes, dtype):
        """The values of the nbytes at off in the scratch buffer, as dtype
        (a copy to the host: it waits for the kernels)."""
        raise NotImplementedError


class Launcher:
    """The call path of one export on a Runtime: check the inputs, find (or
    make) the plan for their shapes and device, allocate, launch.

    A call at a shape seen before costs: per input a type, dtype (identity),
    device and contiguity test and its shape in the cache key; one dict
    lookup; the outputs' and the scratch's allocations; the pointer writes;
    a memset per scratch init and a driver call per kernel."""

    def __init__(self, m, dtypes, runtime, sizes=None):
        self.manifest = m
        self.dtypes = dtypes  # tensor name -> the runtime's dtype object
        self.rt = runtime
        self.given_sizes, self.fixed_sizes = fixed_sizes(m, sizes)
        self.in_dtypes = tuple(dtypes[t.name] for t in m.inputs)
        self.n_inputs = len(m.inputs)
        self.plans = {}
        self._plans_get = self.plans.get
        self._lock = threading.Lock()

    # -- the full checks (a plan miss, or an error to explain) -------------

    def check(self, tensors, fake=False):
        """Every input's type, dtype, device and layout; the sizes their
        shapes give. (sizes, device)."""
        m, rt = self.manifest, self.rt
        device = None
        devices = tuple(rt.device_types) + (("meta",) if fake else ())
        for t, x in zip(m.inputs, tensors):
            if not isinstance(x, rt.tensor_type):
                raise TypeError("%s: input %s is %s, not a tensor" % (m.op, t.name, type(x).__name__))
            want = self.dtypes[t.name]
            if x.dtype != want:
                raise TypeError("%s: input %s is %s; want %s (%s)" % (m.op, t.name, x.dtype, want, t.dtype))
            if x.device.type not in devices:
                raise InputError("%s: input %s is on %s; want a CUDA/ROCm device" % (m.op, t.name, x.device))
            if device is None:
                device = x.device
            elif x.device != device:
                raise InputError("%s: input %s is on %s, another input on %s" % (m.op, t.name, x.device, device))
            if not x.is_contiguous():
                raise InputError("%s: input %s is not contiguous (strides %s): the kernels read it row-major; "
                                 "pass .contiguous()" % (m.op, t.name, tuple(x.stride())))
        sizes = infer_sizes(m, [tuple(x.shape) for x in tensors], self.fixed_sizes, self.given_sizes)
        return sizes, device

    def check_shapes(self, tensors, sizes):
        """The plan at sizes, each input's full shape held to it."""
        p = check_plan(self.manifest, sizes)
        for t, x in zip(self.manifest.inputs, tensors):
            if tuple(x.shape) != p.dims[t.name]:
                raise ShapeError("%s: input %s has shape %s; at %s it is %s"
                                 % (self.manifest.op, t.name, tuple(x.shape), sizes_str(sizes), p.dims[t.name]))
        return p

    def fake_outputs(self, tensors):
        """What the registered operator's fake implementation returns, as
        (dims, dtype) per output: the inputs checked as a real call checks
        them (meta tensors allowed too), no plan made, nothing launched.

        With concrete shapes (every size an int) the shape is held to the
        export's class and each input's full shape, as a real call would.
        With symbolic sizes (torch.compile's dynamic shapes: SymInts) an
        output dimension that is a size alone stays symbolic; any other is
        evaluated at the sizes' current values, which specializes them; the
        real call checks the shape in full."""
        sizes, _ = self.check(tensors, fake=True)
        m = self.manifest
        if all(type(v) is int for v in sizes.values()):
            p = self.check_shapes(tensors, sizes)
            dims = [p.dims[t.name] for t in m.outputs]
        else:
            concrete = {k: int(v) for k, v in sizes.items()}
            dims = [tuple(sizes[d.plain_name] if d.plain_name else d.eval(concrete) for d in t.shape)
                    for t in m.outputs]
        return [(d, self.dtypes[t.name]) for d, t in zip(dims, m.outputs)]

    def plan(self, tensors, key=None):
        """The LaunchPlan for tensors (from the cache when key is in it)."""
        if key is not None:
            lp = self._plans_get(key)
            if lp is not None:
                return lp
        sizes, device = self.check(tensors)
        checked = self.check_shapes(tensors, sizes)
        index = device.index if device.index is not None else self.rt.current_device()
        rt = self.rt
        for k, g in zip(self.manifest.kernels, checked.grids):
            rt.check_grid(g, k.block, k.symbol)
        lp = LaunchPlan(self.manifest, sizes, checked, rt.functions(index), rt.launch, rt.memsets,
                        index=index, device=rt.device(index), dtypes=self.dtypes)
        if key is not None:
            with self._lock:
                if len(self.plans) >= PLAN_CACHE_LIMIT:
                    self.plans.clear()
                self.plans[key] = lp
        return lp

    # -- calling -----------------------------------------------------------

    def call(self, args, check_status=True, fallback=None):
        """Run the export on args (its inputs, in the manifest's order);
        the outputs as a tuple. Tensors of a type outside the runtime's
        plain_types that pass the checks go to fallback(args, check_status)
        where one is given, else are planned (not cached) and launched."""
        if len(args) != self.n_inputs:
            raise TypeError("%s takes %d inputs, got %d" % (self.manifest.op, self.n_inputs, len(args)))
        key = []
        push = key.append
        plain = self.rt.plain_types
        for x, dt in zip(args, self.in_dtypes):
            if type(x) not in plain or x.dtype is not dt or not x.is_cuda or not x.is_contiguous():
                self.check(args)  # raises the error that names the input
                if fallback is not None:
                    return fallback(args, check_status)
                lp = self.plan(args)  # a tensor subclass: planned, not cached
                break
            push(x.shape)
            push(x.get_device())
        else:
            key = tuple(key)
            lp = self._plans_get(key)
            if lp is None:
                lp = self.plan(args, key)
        if lp.index != self.rt.current_device():
            return self._issue_on(args, lp, check_status)
        return self._issue(args, lp, check_status)

    def _issue(self, args, lp, check_status):
        rt = self.rt
        dev = lp.device
        empty = rt.empty
        outs = [empty(dims, dtype=dt, device=dev) for dims, dt in lp.outputs]
        scratch, base = None, 0
        if lp.scratch_bytes:
            scratch = empty((lp.scratch_bytes,), dtype=rt.u8, device=dev)
            base = scratch.data_ptr()
            for off, nbytes, t in lp.fills:
                rt.fill(scratch, off, nbytes, t)
        stream = rt.raw_stream(lp.index)
        ptrs = lp.pointers(args, outs, base)
        err = lp.run(ptrs, base, stream)
        if err is not None:
            self._failed(err, lp, ptrs, base, stream)
        if check_status and lp.status:
            self._check_status(lp, scratch)
        return tuple(outs)

    def _issue_on(self, args, lp, check_status):
        """A call on a device other than the current one: that device made
        current (framework and driver) around it."""
        with self.rt.guard(lp.index):
            prev = self.rt.enter(lp.index)
            try:
                return self._issue(args, lp, check_status)
            finally:
                self.rt.leave(prev)

    def _failed(self, err, lp, ptrs, base, stream):
        rc, what, issued = err
        if issued == 0 and rc in self.rt.retry_codes:
            # Nothing was issued: the driver had another (or no) context
            # current on this thread. Again, inside the device's.
            prev = self.rt.enter(lp.index)
            try:
                err = lp.run(ptrs, base, stream)
            finally:
                self.rt.leave(prev)
            if err is None:
                return
            rc, what, issued = err
        self.rt.check(rc, "%s: %s" % (self.manifest.op, what))

    def _check_status(self, lp, scratch):
        for name, off, nbytes, dtype, how in lp.status:
            bad = [v for v in self.rt.read_words(scratch, off, nbytes, dtype) if v != 0]
            if bad:
                raise StatusError("%s: at %s the kernels found bad input: status word %s = %s (%s); "
                                  "the outputs are not valid" % (self.manifest.op, sizes_str(lp.sizes), name, bad[0], how))
