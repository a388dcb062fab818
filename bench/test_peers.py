#!/usr/bin/env python3
"""Tests of bench/peers.py that need neither torch nor a GPU.

  python3 -m unittest bench/test_peers.py      (from the repository root)
  python3 bench/test_peers.py

Three kinds:

  - the torch-free logic: job parsing and validation, tensor specs and byte
    counts (against numbers fp8gen's Go code gives, testdata/peers_jobs.json),
    group sizes, rows, the table, the JSON file;
  - the peers' maths, run on FakeTorch below (a small value-level stand-in:
    flat Python lists, f32/bf16/fp8 rounding, the few ops the peers use) and
    held to per-element references written from the Go ops' definitions
    (ops/cast.go, ops/moe.go, ops/qknorm.go, ops/mx.go), for every option;
  - main() end to end on FakeTorch: the rows of a jobs file, errors
    recorded and the run going on.

FakeTorch has no autograd: the backward peer is checked for its wiring and
output shapes only. It says nothing about torch.compile, CUDA or timing.
"""

import bisect
import contextlib
import io
import itertools
import json
import math
import os
import random
import struct
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

TESTDATA = os.path.join(HERE, "testdata", "peers_jobs.json")


# ---- FakeTorch: numbers ----


F32_STRUCT = struct.Struct("<f")


def f32(x):
    """x rounded to float32 (inf past its range)."""
    try:
        return F32_STRUCT.unpack(F32_STRUCT.pack(x))[0]  # rounds to nearest; inf and nan pass
    except OverflowError:
        return math.copysign(math.inf, x)


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", f32(x)))[0]


def f32_from_bits(b):
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def bf16(x):
    """x rounded to bfloat16, to nearest even."""
    x = f32(x)
    if math.isnan(x) or math.isinf(x):
        return x
    b = f32_bits(x)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def fp8_values(name):
    """Code -> value of an FP8 format (NaN codes as nan)."""
    ebits, mbits, bias = (4, 3, 7) if name == "e4m3fn" else (5, 2, 15)
    out = []
    for code in range(256):
        s, e, m = code >> 7, (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
        if name == "e4m3fn" and e == 15 and m == 7:
            v = math.nan
        elif name == "e5m2" and e == 31:
            v = math.inf if m == 0 else math.nan
        elif e == 0:
            v = m / (1 << mbits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
        out.append(-v if s else v)
    return out


class FP8:
    def __init__(self, name):
        self.values = fp8_values(name)
        self.pos = sorted((v, c) for c, v in enumerate(self.values[:128]) if math.isfinite(v))
        self.pos_values = [v for v, _ in self.pos]
        self.max = self.pos[-1][0]
        self.nan_code = 0x7F
        self.overflow = math.nan if name == "e4m3fn" else math.inf

    def code(self, x):
        """Round to nearest, ties to the even code; past the range: NaN (e4m3fn) or inf (e5m2)."""
        if math.isnan(x):
            return self.nan_code
        a = abs(x)
        if a > self.max:
            half = self.max + (self.max - self.pos[-2][0]) / 2
            if a >= half:
                v = self.overflow
                return self.nan_code if math.isnan(v) else (0xFC if x < 0 else 0x7C)
            c = self.pos[-1][1]
        else:
            i = bisect.bisect_left(self.pos_values, a)  # the first value >= a
            (v0, c0), (v1, c1) = self.pos[max(i - 1, 0)], self.pos[i]
            d0, d1 = a - v0, v1 - a
            c = c1 if d1 == 0 or not (d0 < d1 or (d0 == d1 and c0 % 2 == 0)) else c0
        return c | (0x80 if x < 0 or (x == 0 and math.copysign(1, x) < 0) else 0)

    def round(self, x):
        return self.values[self.code(x)]


# ---- FakeTorch: tensors ----


class DType:
    """A dtype; a float's bits(v) is its bit pattern (unsigned), from_bits the way back."""

    def __init__(self, name, size, kind, rnd=None, bits=None, from_bits=None):
        self.name, self.size, self.kind, self.rnd, self.bits = name, size, kind, rnd, bits
        self.from_bits = from_bits
        self.is_floating_point = kind == "float"

    def __repr__(self):
        return "torch." + self.name

    def cast(self, v):
        if self.kind == "int":  # two's complement wrap, as torch's integer ops
            v = int(v) & ((1 << 8 * self.size) - 1)
            signed = not self.name.startswith("u")
            return v - (1 << 8 * self.size) if signed and v >> (8 * self.size - 1) else v
        if self.kind == "bool":
            return bool(v)
        return self.rnd(float(v))


E4M3, E5M2 = FP8("e4m3fn"), FP8("e5m2")
float32 = DType("float32", 4, "float", f32, f32_bits, f32_from_bits)
float64 = DType("float64", 8, "float", float, lambda v: struct.unpack("<Q", struct.pack("<d", v))[0])
bfloat16 = DType("bfloat16", 2, "float", bf16, lambda v: f32_bits(v) >> 16)
float8_e4m3fn = DType("float8_e4m3fn", 1, "float", E4M3.round, E4M3.code)
float8_e5m2 = DType("float8_e5m2", 1, "float", E5M2.round, E5M2.code)
uint8 = DType("uint8", 1, "int")
int16 = DType("int16", 2, "int")
int32 = DType("int32", 4, "int")
int64 = DType("int64", 8, "int")
boolean = DType("bool", 1, "bool")


def numel(shape):
    return math.prod(shape)


def unravel(i, shape):
    idx = []
    for n in reversed(shape):
        idx.append(i % n)
        i //= n
    return tuple(reversed(idx))


def ravel(idx, shape):
    i = 0
    for k, n in zip(idx, shape):
        i = i * n + k
    return i


def broadcast_shapes(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"shapes {a} and {b} do not broadcast")
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)


def promote(a, b):
    """Result dtype of a op b, a and b tensors or Python numbers (the numbers weak)."""
    ta, tb = isinstance(a, FT), isinstance(b, FT)
    if ta and tb:
        if a.dtype is b.dtype:
            return a.dtype
        order = [boolean, uint8, int16, int32, int64, bfloat16, float32, float64]
        fl = [d for d in (a.dtype, b.dtype) if d.kind == "float"]
        if len(fl) == 1:
            return fl[0]
        return max(a.dtype, b.dtype, key=order.index)
    t, n = (a, b) if ta else (b, a)
    if isinstance(n, float) and t.dtype.kind != "float":
        return float32
    return t.dtype


def norm_dim(d, n):
    return d + n if d < 0 else d


class FT:
    """A tensor: row-major values (already rounded to dtype), a shape, a dtype."""

    def __init__(self, data, shape, dtype, rounded=False):
        """rounded: data's values are dtype's already (a copy, a view, a gather), not cast again."""
        self.shape = tuple(shape)
        assert len(data) == numel(self.shape), (len(data), self.shape)
        self.dtype = dtype
        self.data = list(data) if rounded else [dtype.cast(v) for v in data]
        self.device = "cuda"
        self.requires_grad = False

    # -- basics
    def numel(self):
        return len(self.data)

    def element_size(self):
        return self.dtype.size

    def dim(self):
        return len(self.shape)

    def at(self, idx):
        return self.data[ravel(idx, self.shape)]

    def item(self):
        assert len(self.data) == 1
        return self.data[0]

    def tolist(self):
        def build(prefix, dims):
            if not dims:
                return self.at(prefix)
            return [build(prefix + (i,), dims[1:]) for i in range(dims[0])]
        return build((), self.shape)

    def clone(self):
        return FT(self.data, self.shape, self.dtype, rounded=True)

    def contiguous(self):
        return self

    def detach(self):
        return FT(self.data, self.shape, self.dtype, rounded=True)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    def to(self, dtype):
        return FT(self.data, self.shape, dtype, rounded=dtype is self.dtype)

    def float(self):
        return self.to(float32)

    def new_zeros(self, size):
        return FT([0] * numel(size), size, self.dtype)

    def copy_(self, src):
        assert src.shape == self.shape
        self.data = [self.dtype.cast(v) for v in src.data]
        return self

    def view(self, *shape):
        """view(dtype): the same bits as another dtype of the same size (an
        integer, or float32 from int32); view(shape): reshape."""
        if len(shape) == 1 and isinstance(shape[0], DType):
            dt, src = shape[0], self.dtype
            assert dt.size == src.size, "view: same-size dtypes only"
            bits = self.data if src.kind == "int" else [src.bits(v) for v in self.data]
            if dt.kind == "int":
                return FT(bits, self.shape, dt)
            assert src.kind == "int" and dt.from_bits, f"view: no {src} -> {dt}"
            return FT([dt.from_bits(b) for b in bits], self.shape, dt)
        return self.reshape(*shape)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if -1 in shape:
            known = numel([n for n in shape if n != -1])
            shape = tuple(len(self.data) // known if n == -1 else n for n in shape)
        assert numel(shape) == len(self.data), f"reshape {self.shape} -> {shape}"
        return FT(self.data, shape, self.dtype, rounded=True)

    def flatten(self, start_dim=0, end_dim=-1):
        n = len(self.shape)
        s, e = norm_dim(start_dim, n), norm_dim(end_dim, n)
        return self.reshape(self.shape[:s] + (numel(self.shape[s:e + 1]),) + self.shape[e + 1:])

    def permute(self, *perm):
        if len(perm) == 1 and isinstance(perm[0], (tuple, list)):
            perm = tuple(perm[0])
        shape = tuple(self.shape[p] for p in perm)
        out = []
        for i in range(numel(shape)):
            idx = unravel(i, shape)
            src = [0] * len(perm)
            for k, p in enumerate(perm):
                src[p] = idx[k]
            out.append(self.at(tuple(src)))
        return FT(out, shape, self.dtype, rounded=True)

    def transpose(self, a, b):
        n = len(self.shape)
        perm = list(range(n))
        a, b = norm_dim(a, n), norm_dim(b, n)
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(perm)

    def t(self):
        assert len(self.shape) == 2
        return self.transpose(0, 1)

    def expand(self, *sizes):
        sizes = tuple(self.shape[i - (len(sizes) - len(self.shape))] if s == -1 else s for i, s in enumerate(sizes))
        return self._broadcast_to(sizes)

    def _broadcast_to(self, shape):
        if self.shape == tuple(shape):
            return self
        if len(self.data) == 1:
            return FT(self.data * numel(shape), shape, self.dtype, rounded=True)
        pad = (1,) * (len(shape) - len(self.shape)) + self.shape
        out = []
        for i in range(numel(shape)):
            idx = unravel(i, shape)
            out.append(self.data[ravel(tuple(0 if p == 1 else k for k, p in zip(idx, pad)), pad)])
        return FT(out, shape, self.dtype, rounded=True)

    # -- indexing
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if any(isinstance(k, FT) for k in key):
            (ix,) = key  # only t[index_tensor], on dim 0
            rest = self.shape[1:]
            out = []
            for r in ix.data:
                base = r * numel(rest)
                out.extend(self.data[base:base + numel(rest)])
            return FT(out, ix.shape + rest, self.dtype, rounded=True)
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        full = []
        for k in key:
            if k is Ellipsis:
                full.extend([slice(None)] * (len(self.shape) - used))
            else:
                full.append(k)
        full.extend([slice(None)] * (len(self.shape) - sum(1 for k in full if k is not None)))
        plan, dim, oshape = [], 0, []
        for k in full:
            if k is None:
                plan.append(("new",))
                oshape.append(1)
            elif isinstance(k, int):
                plan.append(("sel", norm_dim(k, self.shape[dim])))
                dim += 1
            else:
                r = list(range(*k.indices(self.shape[dim])))
                plan.append(("rng", r))
                oshape.append(len(r))
                dim += 1
        out = []
        for i in range(numel(oshape)):
            oidx, src, o = unravel(i, oshape), [], 0
            for p in plan:
                if p[0] == "new":
                    o += 1
                elif p[0] == "sel":
                    src.append(p[1])
                else:
                    src.append(p[1][oidx[o]])
                    o += 1
            out.append(self.at(tuple(src)))
        return FT(out, oshape, self.dtype, rounded=True)

    # -- elementwise
    def _map(self, f, dtype=None):
        return FT([f(v) for v in self.data], self.shape, dtype or self.dtype)

    def _operands(self, other, reverse=False):
        """The two operands' values, broadcast and promoted, their shape and dtype."""
        a, b = (other, self) if reverse else (self, other)
        dtype = promote(a, b)
        ta = a if isinstance(a, FT) else FT([a], (), dtype)
        tb = b if isinstance(b, FT) else FT([b], (), dtype)
        shape = broadcast_shapes(ta.shape, tb.shape)
        xs, ys = ta._broadcast_to(shape).data, tb._broadcast_to(shape).data
        if ta.dtype is not dtype:
            xs = [dtype.cast(v) for v in xs]
        if tb.dtype is not dtype:
            ys = [dtype.cast(v) for v in ys]
        return xs, ys, shape, dtype

    def _binary(self, other, f, reverse=False):
        xs, ys, shape, dtype = self._operands(other, reverse)
        return FT([f(x, y) for x, y in zip(xs, ys)], shape, dtype)

    def __mul__(self, o):
        return self._binary(o, lambda x, y: x * y)

    def __rmul__(self, o):
        return self._binary(o, lambda x, y: x * y, reverse=True)

    def __add__(self, o):
        return self._binary(o, lambda x, y: x + y)

    def __radd__(self, o):
        return self._binary(o, lambda x, y: x + y, reverse=True)

    def __sub__(self, o):
        return self._binary(o, lambda x, y: x - y)

    def __truediv__(self, o):
        return self._binary(o, lambda x, y: x / y if y else math.copysign(math.inf, x) * math.copysign(1, y))

    def __rtruediv__(self, o):
        return self._binary(o, lambda x, y: x / y if y else math.copysign(math.inf, x) * math.copysign(1, y),
                            reverse=True)

    def __rsub__(self, o):
        return self._binary(o, lambda x, y: x - y, reverse=True)

    def _int_binary(self, o, f):
        assert self.dtype.kind == "int" and not isinstance(o, float), "bit ops: integer tensors only"
        return self._binary(o, f)

    def __and__(self, o):
        if self.dtype.kind == "bool" and isinstance(o, FT) and o.dtype.kind == "bool":
            return FT([a and b for a, b in zip(self.data, o._broadcast_to(self.shape).data)], self.shape, boolean)
        return self._int_binary(o, lambda x, y: x & y)

    def __floordiv__(self, o):  # torch's: floor division
        return self._int_binary(o, lambda x, y: x // y)

    def __mod__(self, o):  # torch's: the sign of the divisor
        return self._int_binary(o, lambda x, y: x % y)

    def __rshift__(self, o):  # arithmetic on the signed types, as torch's
        return self._int_binary(o, lambda x, y: x >> y)

    def __lshift__(self, o):  # the bits shifted out dropped by the dtype's wrap
        return self._int_binary(o, lambda x, y: x << y)

    def _compare(self, o, f):
        xs, ys, shape, _ = self._operands(o)
        return FT([f(x, y) for x, y in zip(xs, ys)], shape, boolean)

    def __eq__(self, o):
        return self._compare(o, lambda x, y: x == y)

    def __ne__(self, o):
        return self._compare(o, lambda x, y: x != y)

    def __gt__(self, o):
        return self._compare(o, lambda x, y: x > y)

    def __ge__(self, o):
        return self._compare(o, lambda x, y: x >= y)

    def __lt__(self, o):
        return self._compare(o, lambda x, y: x < y)

    def __le__(self, o):
        return self._compare(o, lambda x, y: x <= y)

    __hash__ = object.__hash__

    def __neg__(self):
        return self._map(lambda v: -v)

    def abs(self):
        return self._map(abs)

    def cos(self):
        return self._map(math.cos)

    def sin(self):
        return self._map(math.sin)

    def pow(self, p):
        return self._map(lambda v: v ** p)

    def clamp(self, min=None, max=None):  # noqa: A002 -- torch's names
        lo = None if min is None else self.dtype.cast(min)
        hi = None if max is None else self.dtype.cast(max)

        def c(v):
            if lo is not None and v < lo:
                v = lo
            if hi is not None and v > hi:
                v = hi
            return v
        return self._map(c)

    # -- reductions
    def _reduce(self, f, dim, keepdim):
        """f over dim (an int, or a tuple of them: over all those dims at once)."""
        if dim is None or dim == ():
            return FT([f(self.data)], (1,) * len(self.shape) if keepdim else (), self.dtype)
        dims = {norm_dim(d, len(self.shape)) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
        if any(self.shape[d] == 0 for d in dims):
            raise RuntimeError("reduction over a dim of size 0")
        oshape = tuple(n for a, n in enumerate(self.shape) if a not in dims)
        groups = [[] for _ in range(numel(oshape))]  # each output's elements, in row-major order
        for i, v in enumerate(self.data):
            idx = unravel(i, self.shape)
            groups[ravel(tuple(x for a, x in enumerate(idx) if a not in dims), oshape)].append(v)
        out = [f(g) for g in groups]
        shape = tuple(1 if a in dims else n for a, n in enumerate(self.shape)) if keepdim else oshape
        return FT(out, shape, self.dtype)

    def _max(self, v):
        if self.dtype.kind == "float" and any(math.isnan(x) for x in v):
            return math.nan  # torch's max and amax propagate a NaN
        return max(v)

    def amax(self, dim=None, keepdim=False):
        return self._reduce(self._max, dim, keepdim)

    def max(self):
        return self._reduce(self._max, None, False)

    def sum(self):
        t = self._reduce(lambda v: sum(int(x) for x in v) if self.dtype.kind != "float" else math.fsum(v),
                         None, False)
        if self.dtype.kind == "bool":
            t = FT(t.data, t.shape, int64)
        return t

    def mean(self, dim=None, keepdim=False):
        return self._reduce(lambda v: math.fsum(v) / len(v), dim, keepdim)

    def cumsum(self, dim):
        assert norm_dim(dim, len(self.shape)) == 0 and len(self.shape) == 1 and self.dtype.kind == "int"
        out, acc = [], 0
        for v in self.data:
            acc += v
            out.append(acc)
        return FT(out, self.shape, int64)  # torch sums the integer types in int64

    def scatter_reduce(self, dim, index, src, reduce, include_self=True):
        assert dim == 0 and reduce == "amax" and include_self
        out = self.clone()
        for i in range(index.numel()):
            idx = unravel(i, index.shape)
            dst = (index.data[i],) + idx[1:]
            j = ravel(dst, out.shape)
            out.data[j] = max(out.data[j], src.at(idx))
        return out


# ---- FakeTorch: the module ----


class FakeEvent:
    def __init__(self, enable_timing=False):
        pass

    def record(self):
        pass

    def elapsed_time(self, other):
        return 100.0  # ms: keeps event_median_ms's loop counts small


class Generator:
    def __init__(self, device=None):
        self.rng = random.Random(0)

    def manual_seed(self, seed):
        self.rng = random.Random(seed)
        return self


def make_fake_torch(fail_modes=()):
    """A module standing in for torch; torch.compile(mode in fail_modes) raises."""
    t = types.ModuleType("torch")
    t.__version__ = "0.0+fake"
    for d in (float32, float64, bfloat16, float8_e4m3fn, float8_e5m2, uint8, int16, int32, int64):
        setattr(t, d.name, d)
    t.bool = boolean
    t.calls = {"compile": [], "reset": 0, "grad": [], "empty": [], "zero_": 0}

    def finfo(dt):
        return types.SimpleNamespace(max={"float8_e4m3fn": E4M3.max, "float8_e5m2": E5M2.max}[dt.name])

    def unary(f):
        return lambda x: x._map(f)

    t.finfo = finfo
    t.exp2 = unary(lambda v: 2.0 ** v)
    t.floor = unary(lambda v: v if math.isinf(v) or math.isnan(v) else math.floor(v))
    t.log2 = unary(lambda v: -math.inf if v == 0 else math.nan if not v > 0 else math.log2(v))
    t.rsqrt = unary(lambda v: 1 / math.sqrt(v) if v else math.inf)
    t.device = lambda s: s
    t.Generator = Generator

    def stack(seq, dim=0):
        seq = list(seq)
        shape = seq[0].shape
        assert all(s.shape == shape for s in seq)
        d = norm_dim(dim, len(shape) + 1)
        oshape = shape[:d] + (len(seq),) + shape[d:]
        out = []
        for i in range(numel(oshape)):
            idx = unravel(i, oshape)
            out.append(seq[idx[d]].at(idx[:d] + idx[d + 1:]))
        return FT(out, oshape, seq[0].dtype, rounded=True)

    def cat(seq, dim=0):
        seq = list(seq)
        n = len(seq[0].shape)
        d = norm_dim(dim, n)
        oshape = seq[0].shape[:d] + (sum(s.shape[d] for s in seq),) + seq[0].shape[d + 1:]
        out = []
        for i in range(numel(oshape)):
            idx = list(unravel(i, oshape))
            for s in seq:
                if idx[d] < s.shape[d]:
                    out.append(s.at(tuple(idx)))
                    break
                idx[d] -= s.shape[d]
        return FT(out, oshape, seq[0].dtype, rounded=True)

    def arange(n, device=None, dtype=None):
        return FT(list(range(n)), (n,), dtype or int64)

    def zeros(*size, device=None, dtype=None):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        return FT([0] * numel(size), size, dtype or float32)

    def tensor(data, dtype=None, device=None):
        return FT(list(data), (len(data),), dtype or float32)

    def searchsorted(seq, values, right=False):
        import bisect
        f = bisect.bisect_right if right else bisect.bisect_left
        return FT([f(seq.data, v) for v in values.data], values.shape, int64)

    def pow(base, exponent):
        return exponent._map(lambda v: base ** v)

    def where(cond, a, b):
        dtype = promote(a, b)
        ta = a if isinstance(a, FT) else FT([a], (), dtype)
        tb = b if isinstance(b, FT) else FT([b], (), dtype)
        shape = broadcast_shapes(broadcast_shapes(cond.shape, ta.shape), tb.shape)
        cs, xs, ys = (t._broadcast_to(shape).data for t in (cond, ta, tb))
        return FT([x if c else y for c, x, y in zip(cs, xs, ys)], shape, dtype)

    def randn(shape, device=None, generator=None, dtype=None):
        rng = generator.rng if generator else random
        return FT([rng.gauss(0, 1) for _ in range(numel(shape))], shape, dtype or float32)

    def randint(lo, hi, size, dtype=None, device=None):
        return FT([random.randrange(lo, hi) for _ in range(numel(size))], size, dtype or int64)

    def empty_like(x):
        return FT([0] * x.numel(), x.shape, x.dtype)

    def empty(*size, device=None, dtype=None):  # the L2 flush buffer: not materialized, its zero_ counted
        t.calls["empty"].append((size, dtype))

        def zero_():
            t.calls["zero_"] += 1
        return types.SimpleNamespace(zero_=zero_)

    def compile(fn, mode=None, dynamic=None, **kw):  # noqa: A001 -- torch's name
        t.calls["compile"].append((getattr(fn, "__name__", "?"), mode, dynamic))
        if mode in fail_modes:
            raise RuntimeError(f"InductorError: fake failure of mode {mode}\nSet TORCHDYNAMO_VERBOSE=1 for more")
        return fn

    def pad(x, pad, mode="constant", value=0.0):
        """torch.nn.functional.pad: (before, after) pairs from the last dim back; constant, >= 0."""
        assert mode == "constant" and len(pad) % 2 == 0 and len(pad) // 2 <= x.dim() and min(pad) >= 0
        n = x.dim()
        before, after = [0] * n, [0] * n
        for i in range(len(pad) // 2):
            before[n - 1 - i], after[n - 1 - i] = pad[2 * i], pad[2 * i + 1]
        oshape = tuple(s + b + a for s, b, a in zip(x.shape, before, after))
        out = [x.dtype.cast(value)] * numel(oshape)
        for i, v in enumerate(x.data):
            out[ravel(tuple(k + b for k, b in zip(unravel(i, x.shape), before)), oshape)] = v
        return FT(out, oshape, x.dtype, rounded=True)

    def grad(outputs, inputs, grad_outputs):
        # No autograd here: check the call's wiring, give zeros of the inputs' shapes.
        assert len(outputs) == len(grad_outputs)
        for o, g in zip(outputs, grad_outputs):
            assert o.shape == g.shape, (o.shape, g.shape)
        assert all(x.requires_grad for x in inputs)
        t.calls["grad"].append(tuple(x.shape for x in inputs))
        return tuple(FT([0] * x.numel(), x.shape, x.dtype) for x in inputs)

    for name, f in dict(stack=stack, cat=cat, arange=arange, zeros=zeros, tensor=tensor, searchsorted=searchsorted,
                        pow=pow, where=where, randn=randn, randint=randint, empty_like=empty_like, empty=empty,
                        compile=compile).items():
        setattr(t, name, f)
    t.enable_grad = contextlib.nullcontext
    t.nn = types.SimpleNamespace(functional=types.SimpleNamespace(pad=pad))
    t.autograd = types.SimpleNamespace(grad=grad)

    def reset():
        t.calls["reset"] += 1

    t._dynamo = types.SimpleNamespace(reset=reset)
    t.cuda = types.SimpleNamespace(
        is_available=lambda: True, get_device_name=lambda *a: "Fake GPU",
        get_device_properties=lambda *a: types.SimpleNamespace(L2_cache_size=4096),
        synchronize=lambda: None, empty_cache=lambda: None, Event=FakeEvent)
    return t


@contextlib.contextmanager
def fake_torch_in_peers(fake):
    old = peers.torch
    peers.torch = fake
    try:
        yield fake
    finally:
        peers.torch = old


def job(op, sizes, target="e4m3fn", **options):
    """A normalised job (ideal bytes our own count); target is the job's fp8 field."""
    j = peers.validate_job({"op": op, "shape": "x".join(str(v) for v in sizes.values()), "sizes": sizes,
                            "options": options, "fp8": target, "ideal_bytes": 1}, 0)
    assert j["unsupported"] is None, j["unsupported"]
    j["ideal_bytes"] = peers.peer_bytes(j)
    return j


def randn_ft(shape, dtype, rng, scale=3.0):
    return FT([rng.gauss(0, 1) * scale for _ in range(numel(shape))], shape, dtype)


# ---- references, per element, from the Go ops' definitions ----


def ref_scale(amax, fmax, pow2):
    s = f32(fmax / max(amax, f32(1e-12)))
    if pow2:
        s = 2.0 ** math.floor(math.log2(s))
    return s


def ref_cast_groups(values, fmt, fmax, pow2):
    """One group of values (a list) -> (fp8 values, inv_scale)."""
    amax = max((abs(v) for v in values), default=0.0)
    s = ref_scale(amax, fmax, pow2)
    return [fmt.round(max(-fmax, min(fmax, f32(v * s)))) for v in values], f32(1 / s)


def ref_mx_block(values, fmt, rceil):
    """ops/mx.go's rule for one block -> (E8M0 byte, fp8 codes), exact where
    the rule is: floor(log2 amax) by math.frexp, rceil's X the smallest with
    2^X at or above the f32 descale, x · 2^-X in float64 (exact)."""
    if any(math.isnan(v) or math.isinf(v) for v in values):
        return 0xFF, [fmt.code(math.nan)] * len(values)
    amax = max(abs(v) for v in values)
    if rceil:
        descale = f32(amax * f32(1 / fmt.max))
        x = -127
        while 2.0 ** x < descale:
            x += 1
    elif amax == 0:
        x = -127
    else:
        emax = {448.0: 8, 57344.0: 15}[fmt.max]
        _, e = math.frexp(amax)  # amax = f · 2^e, f in [0.5, 1)
        x = max(e - 1 - emax, -127)
    return x + 127, [fmt.code(max(-fmt.max, min(fmt.max, math.ldexp(v, -x)))) for v in values]


def ref_mx(x, fmt, rceil, dim):
    """mx_cast's outputs for x[M, K] (an FT): name -> codes or scale bytes, row-major."""
    m, k = x.shape
    rows = [x.data[i * k:(i + 1) * k] for i in range(m)]
    out = {}
    if dim in ("0", "both"):  # block (i, j): x[i, 32j : 32j+32]
        blocks = [ref_mx_block(r[j:j + 32], fmt, rceil) for r in rows for j in range(0, k, 32)]
        out["q"] = [c for _, codes in blocks for c in codes]
        out["scale"] = [b for b, _ in blocks]
    if dim in ("1", "both"):  # block (j, i): x[32i : 32i+32, j], qt[j, 32i+e] its codes
        cols = [[r[j] for r in rows] for j in range(k)]
        blocks = [ref_mx_block(c[i:i + 32], fmt, rceil) for c in cols for i in range(0, m, 32)]
        out["qt"] = [c for _, codes in blocks for c in codes]
        out["scale_t"] = [b for b, _ in blocks]
    return out


def ref_mx_swizzle(scales, rows, cols):
    """scales (row-major [rows, cols]) in the GEMMs' layout (ops/mx.go): tile
    (r // 128, c // 4) of the zero-padded matrix at 512 bytes a tile, tiles
    row-major, S[r, c] at (r % 32) * 16 + (r % 128 // 32) * 4 + c % 4 in it."""
    tiles_per_row = -(-cols // 4)
    out = [0] * (-(-rows // 128) * tiles_per_row * 512)
    for r in range(rows):
        for c in range(cols):
            tile = r // 128 * tiles_per_row + c // 4
            out[tile * 512 + r % 32 * 16 + r % 128 // 32 * 4 + c % 4] = scales[r * cols + c]
    return out


def ref_group_swizzle(scales, rows, cols, ends, width):
    """Row-major scales [rows, cols] laid out per group as grouped_mx_cast's
    scales=swizzled (ops/mx_grouped.go): group g's ends[g]/32 - ends[g-1]/32
    columns as their own matrix in ref_mx_swizzle's layout, those bytes in
    order from byte rows' * (the widths of the groups before it), rows' =
    rows rounded up to 128, each group's width its blocks rounded up to 4,
    in a buffer of rows' * width bytes. Returns the bytes and the groups'
    end columns."""
    rp = -(-rows // 128) * 128
    out = [0] * (rp * width)
    first, col, widths, prev = 0, 0, [], 0
    for end in ends:
        nb, prev = end // 32 - prev // 32, end
        g = ref_mx_swizzle([scales[r * cols + first + c] for r in range(rows) for c in range(nb)], rows, nb)
        out[col * rp:col * rp + len(g)] = g
        first, col = first + nb, col + -(-nb // 4) * 4
        widths.append(col)
    return out, widths


def ref_mx_gfx950(scales, rows, cols):
    """scales (row-major [rows, cols]) in hipBLASLt's gfx950 layout (ops/mx.go):
    tile (r // 32, c // 8) of the zero-padded matrix at 256 bytes a tile,
    tiles row-major, S[r, c] at (c % 4) * 64 + (r % 16) * 4 + (c % 8 // 4) * 2
    + r % 32 // 16 in it."""
    tiles_per_row = -(-cols // 8)
    out = [0] * (-(-rows // 32) * tiles_per_row * 256)
    for r in range(rows):
        for c in range(cols):
            tile = r // 32 * tiles_per_row + c // 8
            out[tile * 256 + c % 4 * 64 + r % 16 * 4 + c % 8 // 4 * 2 + r % 32 // 16] = scales[r * cols + c]
    return out


def mx_blocks_to_plant(dtype, fmax, rng):
    """Blocks of 32 values of the classes the scale rules break on, rounded to dtype."""
    step = 1 if dtype is float32 else 0x10000  # one ulp of dtype, in f32 bits

    def ulps(v, n):  # the value n of dtype's ulps from v (> 0)
        return f32_from_bits(f32_bits(v) + n * step)

    def small(e):
        return (e - 16) * 0.01

    def lone(at, v, rest=small):
        return [v if e == at else rest(e) for e in range(32)]

    ties = [fmax, 1.0625, 1.1875, -2.125, 3 * 2.0 ** -10, 5 * 2.0 ** -10,  # e4m3's, at X = 0
            1.125, 1.375, -2.25, 1.5 * 2.0 ** -16, 2.5 * 2.0 ** -16, 464.0, -0.0]  # e5m2's; 464: e4m3's past fmax
    kinds = [
        [0.0] * 32,
        [-0.0] * 32,
        [-1024.0 if e == 5 else (e % 5) * 200.0 for e in range(32)],  # amax 2^10 exactly
        lone(9, ulps(1024.0, -1), lambda e: rng.uniform(-500, 500)),  # just below 2^10: the log2 trap
        lone(0, -ulps(2.0 ** 100, -1), lambda e: rng.gauss(0, 1) * 2.0 ** 90),
        [[fmax * 8, -fmax * 8, 3.0, -1e-3][e % 4] for e in range(32)],  # amax fmax · 2^k
        lone(3, ulps(fmax * 16, 1)),  # rceil's neighbours of fmax · 2^k
        lone(3, -ulps(fmax * 16, -1)),
        lone(3, ulps(fmax * 2.0 ** -127, 1), lambda e: 0.0),  # rceil's subnormal descale, at 2^-127
        lone(3, fmax * 2.0 ** -127, lambda e: 0.0),
        lone(3, ulps(fmax * 2.0 ** -127, -1), lambda e: 0.0),
        lone(3, fmax * 2.0 ** -126, lambda e: 0.0),
        [[fmax / 4, 1.0, -fmax / 4, 0.5][e % 4] for e in range(32)],
        [(-1) ** e * math.ldexp(1 + e % 3, -133) for e in range(32)],  # bf16 subnormals
        [math.ldexp(1 + e % 7, -149) for e in range(32)],  # f32 subnormals (bf16: zeros)
        [math.ldexp(1, -126) * (e % 2) for e in range(32)],  # the smallest normal
        [rng.gauss(0, 1) * math.ldexp(1, -140 + rng.randrange(20)) for _ in range(32)],  # near 2^-127
        [[3.3e38, -1.0, 2e38, 0.0][e % 4] for e in range(32)],
        lone(31, -3.38e38, lambda e: rng.gauss(0, 1) * 1e30),
        lone(7, math.nan),
        lone(30, -math.inf),
        lone(0, math.inf),
        ties + [rng.uniform(-1, 1) for _ in range(32 - len(ties))],
        [v * 64 for v in ties] + [rng.uniform(-64, 64) for _ in range(32 - len(ties))],  # ties at X = 6
        lone(2, ulps(2.0 * fmax, -1), lambda e: fmax + e),  # floor's saturation: up to 2 · fmax
        lone(0, fmax * 8, lambda e: rng.gauss(0, 1) * 1e-6),  # the rest underflows
    ]
    assert len(kinds) <= 32
    return [[dtype.cast(v) for v in b] for b in kinds]


def mx_input(m, k, dtype, fmax, rng):
    """x[m, k] (m, k multiples of 32, m >= 32, k >= 64): randn times a power of
    two per row, with the planted blocks along K (row n, columns 0-31) and
    along M (the last 32 rows, column k - 32 + n)."""
    data = []
    for _ in range(m):
        s = 2.0 ** rng.randrange(-20, 21)
        data.extend(rng.gauss(0, 1) * 3 * s for _ in range(k))
    data = [dtype.cast(v) for v in data]
    for n, block in enumerate(mx_blocks_to_plant(dtype, fmax, rng)):
        data[n * k:n * k + 32] = block
        for e, v in enumerate(block):
            data[(m - 32 + e) * k + k - 32 + n] = v
    return FT(data, (m, k), dtype)


def ref_block_scale(values, fmax, pow2):
    """ops/cast.go's refAmax and refScale for one block: amax = maxNum |v|
    from 0 (a NaN ignored), scale = fmax / max(amax, 1e-12) in f32, with
    pow2 the largest power of two not above it (Pow2Floor: exact, by
    frexp); an Inf makes amax Inf and the scale 0."""
    amax = 0.0
    for v in values:
        if not math.isnan(v):
            amax = max(amax, abs(v))
    s = f32(fmax / max(amax, f32(1e-12)))
    if pow2 and 0 < s < math.inf:
        s = math.ldexp(1.0, math.frexp(s)[1] - 1)
    return s


def ref_block_code(v, s, fmt):
    """fp8 code of the f32 product v · s, saturated at ±fmax (a NaN stays NaN: Inf · 0)."""
    y = f32(v * s)
    if not math.isnan(y):
        y = max(-fmt.max, min(fmt.max, y))
    return fmt.code(y)


def ref_block_colmajor(inv, m, kb, fmt, pow2):
    """1x128's inv_scale (row-major [m, kb]) as DeepGEMM reads it: [kb, m
    rounded up to 4], M contiguous, a zero block's inverse scale below M."""
    mp = -(-m // 4) * 4
    zero = f32(1 / ref_block_scale([0.0], fmt.max, pow2))
    return [inv[i * kb + j] if i < m else zero for j in range(kb) for i in range(mp)]


def ref_block_cast(x, fmt, pow2, block):
    """block_cast's outputs for x[M, K] (an FT), as ops/blockwise.go's
    Reference loops: name -> fp8 codes (row-major) or inv_scale f32 values,
    block by block, the last along K (or M) holding the elements that exist."""
    m, k = x.shape
    mb, kb = -(-m // 128), -(-k // 128)
    codes, inv = [None] * (m * k), []

    def block_of(r0, r1, c0, c1, transposed):
        g = [x.data[i * k + j] for i in range(r0, r1) for j in range(c0, c1)]
        s = ref_block_scale(g, fmt.max, pow2)
        inv.append(math.inf if s == 0 else f32(1 / s))
        for i in range(r0, r1):
            for j in range(c0, c1):
                codes[j * m + i if transposed else i * k + j] = ref_block_code(x.data[i * k + j], s, fmt)

    if block == "1x128":  # block (i, j): x[i, 128j : 128j+128]
        for i in range(m):
            for j in range(kb):
                block_of(i, i + 1, 128 * j, min(k, 128 * (j + 1)), False)
        return {"q": codes, "inv_scale": inv}
    if block == "128x1":  # block (j, i): x[128i : 128i+128, j], written transposed
        for j in range(k):
            for i in range(mb):
                block_of(128 * i, min(m, 128 * (i + 1)), j, j + 1, True)
        return {"qt": codes, "inv_scale_t": inv}
    for i in range(mb):  # tile (i, j)
        for j in range(kb):
            block_of(128 * i, min(m, 128 * (i + 1)), 128 * j, min(k, 128 * (j + 1)), False)
    return {"q": codes, "inv_scale": inv}


def block_elements(m, k, block):
    """The flat indices into x[m, k] of each of block_cast's blocks."""
    if block == "1x128":
        return [[i * k + j for j in range(c, min(k, c + 128))] for i in range(m) for c in range(0, k, 128)]
    if block == "128x1":
        return [[i * k + j for i in range(r, min(m, r + 128))] for j in range(k) for r in range(0, m, 128)]
    return [[i * k + j for i in range(r, min(m, r + 128)) for j in range(c, min(k, c + 128))]
            for r in range(0, m, 128) for c in range(0, k, 128)]


def block_kinds(fmt):
    """name -> make(n, rng): n values of a block of the classes the scale
    and the rounding break on (None: the random data left as it is). No
    NaN (the peers' torch.amax propagates it, Go's maxNum does not: see
    test_block_cast_nan_is_where_torch_and_go_differ) and, for f32 inputs,
    no amax within a few ulps above fmax · 2^j (test_block_cast_pow2_log2_trap)."""
    fmax = fmt.max
    ties = [1.0625, 1.1875, -2.125, 3 * 2.0 ** -10, 5 * 2.0 ** -10, 2.0 ** -10, -(2.0 ** -9),  # e4m3's at scale 1
            1.125, 1.375, -2.25, 1.5 * 2.0 ** -16, 2.5 * 2.0 ** -16, 2.0 ** -17, 2.0 ** -16, -0.0]  # e5m2's

    def lone(v, rest):
        def make(n, rng):
            at = rng.randrange(n)
            return [v if e == at else rest(e, rng) for e in range(n)]
        return make

    def pattern(vals, rest=lambda e, rng: rng.uniform(-1, 1)):
        return lambda n, rng: [vals[e] if e < len(vals) else rest(e, rng) for e in range(n)]

    def scaled_ties(p):  # amax fmax · 2^p: scale 2^-p exactly, pow2 or not, so ties stay ties
        vals = [fmax * 2.0 ** p, -fmax * 2.0 ** p] + [t * 2.0 ** p for t in ties]
        return pattern(vals, lambda e, rng: rng.uniform(-fmax, fmax) * 2.0 ** p)

    def edge(n, rng):  # a random amax A (not a power-of-two multiple of fmax) and its neighbours
        a = rng.uniform(1, 2) * 2.0 ** rng.randrange(-12, 12)
        vals = [a, -a, a * (1 - 2.0 ** -8), -a * (1 - 2.0 ** -7), a / 2, a * 0.999]
        out = [vals[e] if e < len(vals) else rng.uniform(-a, a) for e in range(n)]
        rng.shuffle(out)
        return out

    def near_pow2(sign):  # amax fmax · 2^j · (1 ± 2^-7): pow2's floor at its edges (a bf16 step)
        def make(n, rng):
            j = rng.randrange(-8, 8)
            a = fmax * 2.0 ** j * (1 + sign * 2.0 ** -7)
            return lone(a, lambda e, r: r.uniform(-a, a))(n, rng)
        return make

    return {
        "random": lambda n, rng: None,
        "wide": lambda n, rng: [rng.gauss(0, 1) * 2.0 ** rng.randrange(-30, 30) for _ in range(n)],
        "zeros": lambda n, rng: [0.0] * n,
        "-zeros": lambda n, rng: [-0.0] * n,
        "signed zeros and one": lone(1e-3, lambda e, rng: (0.0, -0.0)[e % 2]),
        "ties at scale 1": scaled_ties(0),
        "ties at scale 64": scaled_ties(-6),
        "ties at scale 2^-20": scaled_ties(20),
        "fmax edge": edge,
        "fmax edge, lone": lambda n, rng: lone(rng.uniform(1, 2) * 2.0 ** rng.randrange(-12, 12),
                                               lambda e, r: r.gauss(0, 1))(n, rng),
        "just above fmax 2^j": near_pow2(1),
        "just below fmax 2^j": near_pow2(-1),
        "fp8 subnormals": pattern([fmax, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, -(2.0 ** -18),
                                   3 * 2.0 ** -17, 1e-6, -1e-9], lambda e, rng: rng.gauss(0, 1) * 2.0 ** -12),
        "bf16 subnormals": lambda n, rng: [(-1) ** e * math.ldexp(1 + e % 3, -133) for e in range(n)],
        "f32 subnormals": lambda n, rng: [math.ldexp(1 + e % 7, -149) for e in range(n)],
        "subnormals under a normal": lone(1.0, lambda e, rng: (-1) ** e * math.ldexp(1 + e % 5, -140)),
        "amax above eps": lone(1.5e-12, lambda e, rng: rng.uniform(-1e-12, 1e-12)),
        "amax below eps": lone(-5e-13, lambda e, rng: rng.uniform(-4e-13, 4e-13)),
        "huge": pattern([3.3e38, -1.0, 2e38, 0.0], lambda e, rng: rng.gauss(0, 1) * 1e36),
        "huge, lone": lone(-3.38e38, lambda e, rng: rng.gauss(0, 1) * 1e30),
        "+inf": lone(math.inf, lambda e, rng: rng.gauss(0, 3)),
        "-inf, negatives": lone(-math.inf, lambda e, rng: -abs(rng.gauss(0, 3)) - 1e-3),
        "both infs": pattern([math.inf, -math.inf, 1.0, -1.0, 0.0]),
    }


def block_input(m, k, dtype, fmt, block, rng, start):
    """x[m, k]: randn times 3, then block b (of the op's blocks) planted with
    kind start + b of block_kinds, round and round -> (x, kinds planted)."""
    kinds = list(block_kinds(fmt).items())
    data = [dtype.cast(rng.gauss(0, 1) * 3) for _ in range(m * k)]
    used = set()
    for b, idx in enumerate(block_elements(m, k, block)):
        name, make = kinds[(start + b) % len(kinds)]
        vals = make(len(idx), rng)
        used.add(name)
        if vals is not None:
            for i, v in zip(idx, vals):
                data[i] = dtype.cast(v)
    return FT(data, (m, k), dtype), used


# ---- pure logic ----


class TestJobs(unittest.TestCase):
    def test_import_needs_no_torch(self):
        self.assertIsNone(peers.torch)

    def test_testdata_is_valid_and_bytes_match_fp8gen(self):
        with open(TESTDATA) as f:
            data = json.load(f)
        jobs = peers.parse_jobs(data)
        self.assertEqual(len(jobs), len(data))
        self.assertEqual({j["op"] for j in jobs}, set(peers.OPS))
        for j in jobs:
            with self.subTest(op=j["op"], shape=j["shape"], options=j["options"]):
                self.assertIsNone(j["unsupported"])
                # ideal_bytes there are fp8gen's (Go), bwd with its forward's.
                self.assertEqual(peers.peer_bytes(j), j["ideal_bytes"])

    def test_example_from_the_contract(self):
        j = peers.validate_job({"op": "rowwise_cast", "shape": "8192x8192", "sizes": {"M": 8192, "K": 8192},
                                "options": {"fp8": "e4m3", "in": "bf16", "pow2": "false"}, "fp8": "e4m3fn",
                                "ideal_bytes": 201359360}, 3)
        self.assertEqual(j["index"], 3)
        self.assertEqual(j["fp8"], "e4m3fn")
        self.assertEqual(j["ideal_bytes"], 201359360)
        self.assertEqual(peers.peer_bytes(j), 201359360)
        self.assertEqual(list(j["sizes"]), ["M", "K"])

    def test_defaults_filled_and_order_kept(self):
        j = peers.validate_job({"op": "expert_colwise_cast", "shape": "s", "sizes": {"N": 3, "E": 1, "K": 2},
                                "options": {"layout": "nk"}, "fp8": "e4m3fn", "ideal_bytes": 5}, 0)
        self.assertEqual(j["options"], {"in": "bf16", "fp8": "e4m3", "pow2": "false", "layout": "nk"})
        self.assertEqual(list(j["sizes"]), ["E", "K", "N"])
        j = peers.validate_job({"op": "mx_cast", "shape": "s", "sizes": {"K": 64, "M": 32}, "fp8": "e4m3fn",
                                "ideal_bytes": 5}, 0)
        self.assertEqual(j["options"], {"in": "bf16", "fp8": "e4m3", "mx_round": "floor", "dim": "0", "scales": "rowmajor"})
        self.assertEqual((list(j["sizes"]), j["fp8"]), (["M", "K"], "e4m3fn"))
        j = peers.validate_job({"op": "block_cast", "shape": "s", "sizes": {"K": 97, "M": 3}, "fp8": "e4m3fnuz",
                                "options": {"pow2": "true"}, "ideal_bytes": 5}, 0)
        self.assertEqual(j["options"], {"in": "bf16", "fp8": "e4m3", "pow2": "true", "block": "1x128", "scales": "rowmajor"})
        self.assertEqual((list(j["sizes"]), j["fp8"], j["unsupported"]), (["M", "K"], "e4m3fnuz", None))
        j = peers.validate_job({"op": "qk_norm_rope_bwd", "shape": "s",
                                "sizes": {"B": 1, "S": 2, "HQ": 4, "HKV": 2, "D": 8}, "fp8": None,
                                "ideal_bytes": 5}, 0)
        self.assertEqual(j["options"], {"order": "bshd", "rope": "neox", "weight": "bf16", "eps": "1e-6",
                                        "angles": "table", "dx": "bf16"})
        self.assertIsNone(j["fp8"])

    def test_fp8_resolution(self):
        cases = [("e4m3", "e4m3fn", "e4m3fn"), ("e5m2", "e4m3fn", "e5m2"), ("e5m2", "e5m2", "e5m2"),
                 ("e4m3", "e4m3fnuz", "e4m3fnuz"), ("e5m2", "e4m3fnuz", "e5m2fnuz"), ("e5m2", "e5m2fnuz", "e5m2fnuz")]
        for fam, target, want in cases:
            self.assertEqual(peers.resolve_fp8(fam, target), want)
        j = peers.validate_job({"op": "colwise_cast", "shape": "s", "sizes": {"M": 1, "K": 1},
                                "options": {"fp8": "e5m2"}, "fp8": "e4m3fn", "ideal_bytes": 1}, 0)
        self.assertEqual(j["fp8"], "e5m2")
        # The QK ops have no FP8: whatever fp8 says is dropped.
        j = peers.validate_job({"op": "qk_norm_rope", "shape": "s", "sizes": {"B": 1, "S": 1, "HQ": 1, "HKV": 1,
                                "D": 2}, "fp8": "e4m3fn", "ideal_bytes": 1}, 0)
        self.assertIsNone(j["fp8"])

    def test_malformed_jobs_are_errors(self):
        good = {"op": "rowwise_cast", "shape": "2x3", "sizes": {"M": 2, "K": 3}, "options": {}, "fp8": "e4m3fn",
                "ideal_bytes": 10}
        qk = {"op": "qk_norm_rope", "shape": "s", "sizes": {"B": 1, "S": 1, "HQ": 4, "HKV": 2, "D": 8},
              "fp8": None, "ideal_bytes": 10}
        mx = {"op": "mx_cast", "shape": "s", "sizes": {"M": 48, "K": 64}, "fp8": "e4m3fn", "ideal_bytes": 10}
        self.assertIsNone(peers.validate_job(mx, 0)["unsupported"])  # dim=0: M is free
        bad = [
            ("not a JSON object", [good]),
            ("op must", {**good, "op": 7}),
            ("op must", {**good, "op": ""}),
            ("shape must", {**good, "shape": ""}),
            ("shape must", {**good, "shape": 8192}),
            ("sizes must", {**good, "sizes": [2, 3]}),
            ("sizes must", {**good, "sizes": {"M": 0, "K": 3}}),
            ("sizes must", {**good, "sizes": {"M": True, "K": 3}}),
            ("sizes must", {**good, "sizes": {"M": 2.0, "K": 3}}),
            ("options must", {**good, "options": {"pow2": True}}),
            ("options must", {**good, "options": "pow2=true"}),
            ("fp8 must be", {**good, "fp8": 1}),
            ("fp8 must name", {**good, "fp8": None}),
            ("ideal_bytes", {**good, "ideal_bytes": 0}),
            ("ideal_bytes", {**good, "ideal_bytes": "10"}),
            ("ideal_bytes", {k: v for k, v in good.items() if k != "ideal_bytes"}),
            ("multiple of HKV", {**qk, "sizes": {**qk["sizes"], "HQ": 3}}),
            ("is odd", {**qk, "sizes": {**qk["sizes"], "D": 7}}),
            ("K = 48 is not a multiple of 32", {**mx, "sizes": {"M": 32, "K": 48}}),
            ("M = 48 is not a multiple of 32", {**mx, "sizes": {"M": 48, "K": 64}, "options": {"dim": "both"}}),
            ("not e4m3fnuz", {**mx, "fp8": "e4m3fnuz"}),
        ]
        for want, obj in bad:
            with self.subTest(want=want, obj=obj):
                with self.assertRaises(peers.JobError) as cm:
                    peers.validate_job(obj, 4)
                self.assertIn(want, str(cm.exception))
                self.assertIn("job 4", str(cm.exception))
        with self.assertRaises(peers.JobError):
            peers.parse_jobs({"jobs": []})

    def test_unknown_names_are_unsupported_not_fatal(self):
        good = {"op": "rowwise_cast", "shape": "2x3", "sizes": {"M": 2, "K": 3}, "options": {}, "fp8": "e4m3fn",
                "ideal_bytes": 10}
        cases = [
            ("no peer for op", {**good, "op": "softmax_cast"}),
            ("sizes", {**good, "sizes": {"M": 2, "K": 3, "G": 1}}),
            ("sizes", {**good, "sizes": {"M": 2}}),
            ("option scale", {**good, "options": {"scale": "mx"}}),
            ("option value pow2=maybe", {**good, "options": {"pow2": "maybe"}}),
            ("fp8 'e3m4'", {**good, "fp8": "e3m4"}),
        ]
        for want, obj in cases:
            with self.subTest(want=want):
                j = peers.validate_job(obj, 0)
                self.assertIn(want, j["unsupported"])
                self.assertEqual(j["shape"], "2x3")

    def test_load_jobs_errors(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "jobs.json")
            with open(p, "w") as f:
                f.write("[{")
            with self.assertRaisesRegex(peers.JobError, "not JSON"):
                peers.load_jobs(p)
            with self.assertRaises(peers.JobError):
                peers.load_jobs(os.path.join(d, "missing.json"))
            with open(p, "w") as f:
                f.write("[]")
            self.assertEqual(peers.load_jobs(p), [])

    def test_legacy_jobs(self):
        jobs = peers.legacy_jobs("rowwise_cast,colwise_cast", "8192x8192, 16384x8192", "e4m3fn")
        self.assertEqual([(j["op"], j["shape"]) for j in jobs],
                         [("rowwise_cast", "8192x8192"), ("rowwise_cast", "16384x8192"),
                          ("colwise_cast", "8192x8192"), ("colwise_cast", "16384x8192")])
        self.assertEqual(jobs[0]["ideal_bytes"], 201359360)  # as the old script counted
        self.assertEqual(jobs[2]["ideal_bytes"], 2 * 8192 * 8192 + 8192 * 8192 + 4 * 8192)
        self.assertEqual(peers.legacy_jobs("tensorwise_cast", "4x4", "e4m3fn")[0]["ideal_bytes"], 2 * 16 + 16 + 4)
        e5 = peers.legacy_jobs("rowwise_cast", "4x4", "e5m2")[0]
        self.assertEqual((e5["fp8"], e5["options"]["fp8"]), ("e5m2", "e5m2"))
        for ops, shapes, fp8 in [("qk_norm_rope", "4x4", "e4m3fn"), ("rowwise_cast", "4x", "e4m3fn"),
                                 ("rowwise_cast", "0x4", "e4m3fn"), ("rowwise_cast", "4x4", "e4m3")]:
            with self.assertRaises(peers.JobError):
                peers.legacy_jobs(ops, shapes, fp8)

    def test_parse_modes(self):
        self.assertEqual(peers.parse_modes(peers.DEFAULT_MODES), ["default", "max-autotune-no-cudagraphs"])
        self.assertEqual(peers.parse_modes("max-autotune-no-cudagraphs, default,default"),
                         ["max-autotune-no-cudagraphs", "default"])
        self.assertEqual(peers.parse_modes(""), [])
        with self.assertRaises(peers.JobError):
            peers.parse_modes("reduce-overhead")
        self.assertEqual(peers.COMPILE_MODES, {"default": "compiled", "max-autotune-no-cudagraphs": "autotune"})

    def test_plan_arguments(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "jobs.json")
            with open(p, "w") as f:
                json.dump([], f)
            args, jobs, modes = peers.plan(["--jobs", p, "--out", "o.json"])
            self.assertEqual((jobs, modes, args.rep_ms, args.check), ([], ["default", "max-autotune-no-cudagraphs"],
                                                                       200, False))
            args, _, modes = peers.plan(["--jobs", p, "--compile-mode", "default", "--rep-ms", "5", "--check"])
            self.assertEqual((modes, args.rep_ms, args.check), (["default"], 5, True))
            _, jobs, _ = peers.plan([])  # the legacy defaults
            self.assertEqual(len(jobs), 6)
            for argv in (["--jobs", p, "--ops", "rowwise_cast"], ["--jobs", p, "--compile-modes", "bogus"],
                         ["--jobs", p, "--rep-ms", "0"], ["--jobs", os.path.join(d, "none.json")],
                         ["--ops", "qk_norm_rope"]):
                with self.subTest(argv=argv), contextlib.redirect_stderr(io.StringIO()) as err:
                    with self.assertRaises(SystemExit) as cm:
                        peers.plan(argv)
                    self.assertEqual(cm.exception.code, 2)
                    self.assertIn("error:", err.getvalue())


class TestSpecs(unittest.TestCase):
    def test_input_and_output_specs(self):
        j = job("colwise_cast", {"M": 5, "K": 7}, **{"in": "f32"})
        self.assertEqual(peers.input_specs(j), [("x", (5, 7), "float32")])
        self.assertEqual(peers.output_specs(j), [("qt", (7, 5), "float8_e4m3fn"), ("inv_scale", (7,), "float32")])
        j = job("tensorwise_cast", {"M": 5, "K": 7}, target="e4m3fnuz")
        self.assertEqual(peers.output_specs(j), [("q", (5, 7), "float8_e4m3fnuz"), ("inv_scale", (), "float32")])
        j = job("expert_colwise_cast", {"E": 2, "K": 3, "N": 4}, layout="nk", fp8="e5m2")
        self.assertEqual(peers.output_specs(j)[0], ("qt", (2, 4, 3), "float8_e5m2"))
        j = job("grouped_colwise_cast", {"T": 9, "K": 3, "E": 4})
        self.assertEqual(peers.input_specs(j), [("x", (9, 3), "bfloat16"), ("offsets", (4,), "int32")])
        self.assertEqual(peers.output_specs(j), [("qt", (3, 9), "float8_e4m3fn"), ("inv_scale", (4, 3), "float32")])
        sizes = {"B": 2, "S": 3, "HQ": 4, "HKV": 2, "D": 8}
        j = job("qk_norm_rope", sizes, target=None, order="sbhd", weight="f32")
        self.assertEqual(peers.input_specs(j), [("qkv", (3, 2, 64), "bfloat16"), ("q_weight", (8,), "float32"),
                                                ("k_weight", (8,), "float32"), ("cos", (3, 8), "float32"),
                                                ("sin", (3, 8), "float32")])
        self.assertEqual(peers.output_specs(j), [("q", (3, 2, 4, 8), "bfloat16"), ("k", (3, 2, 2, 8), "bfloat16"),
                                                 ("v", (3, 2, 2, 8), "bfloat16")])
        j = job("qk_norm_rope_bwd", sizes, target=None, angles="theta", dx="f32")
        self.assertEqual([s[0] for s in peers.input_specs(j)],
                         ["qkv", "q_weight", "k_weight", "inv_freq", "dq", "dk", "dv"])
        self.assertEqual(peers.input_specs(j)[3], ("inv_freq", (4,), "float32"))
        self.assertEqual(peers.output_specs(j), [("d_qkv", (2, 3, 64), "float32"), ("d_q_weight", (8,), "float32"),
                                                 ("d_k_weight", (8,), "float32")])

    def test_mx_specs_and_bytes(self):
        j = job("mx_cast", {"M": 64, "K": 96}, **{"in": "f32"})
        self.assertEqual(peers.input_specs(j), [("x", (64, 96), "float32")])
        self.assertEqual(peers.output_specs(j), [("q", (64, 96), "float8_e4m3fn"), ("scale", (64, 3), "uint8")])
        j = job("mx_cast", {"M": 64, "K": 96}, fp8="e5m2", dim="1")
        self.assertEqual(peers.output_specs(j), [("qt", (96, 64), "float8_e5m2"), ("scale_t", (96, 2), "uint8")])
        j = job("mx_cast", {"M": 64, "K": 96}, dim="both")
        self.assertEqual([s[0] for s in peers.output_specs(j)], ["q", "scale", "qt", "scale_t"])
        self.assertEqual(peers.peer_bytes(j), 64 * 96 * (2 + 1 + 1) + 64 * 3 + 96 * 2)

    def test_block_specs_and_bytes(self):
        # cdiv(., 128) blocks: M = 131, K = 200 hold partial ones along both.
        j = job("block_cast", {"M": 131, "K": 200}, **{"in": "f32"})
        self.assertEqual(peers.input_specs(j), [("x", (131, 200), "float32")])
        self.assertEqual(peers.output_specs(j), [("q", (131, 200), "float8_e4m3fn"),
                                                 ("inv_scale", (131, 2), "float32")])
        self.assertEqual(peers.peer_bytes(j), 131 * 200 * (4 + 1) + 131 * 2 * 4)
        j = job("block_cast", {"M": 131, "K": 200}, fp8="e5m2", block="128x1")
        self.assertEqual(peers.output_specs(j), [("qt", (200, 131), "float8_e5m2"),
                                                 ("inv_scale_t", (200, 2), "float32")])
        self.assertEqual(peers.peer_bytes(j), 131 * 200 * (2 + 1) + 200 * 2 * 4)
        j = job("block_cast", {"M": 131, "K": 200}, target="e4m3fnuz", block="128x128")
        self.assertEqual(peers.output_specs(j), [("q", (131, 200), "float8_e4m3fnuz"),
                                                 ("inv_scale", (2, 2), "float32")])
        self.assertEqual(peers.peer_bytes(j), 131 * 200 * (2 + 1) + 2 * 2 * 4)
        self.assertEqual(peers.output_specs(job("block_cast", {"M": 1, "K": 1}, block="128x128"))[1],
                         ("inv_scale", (1, 1), "float32"))

    def test_backward_bytes_include_the_forward(self):
        sizes = {"B": 2, "S": 3, "HQ": 4, "HKV": 2, "D": 8}
        b = job("qk_norm_rope_bwd", sizes, target=None)
        f = job("qk_norm_rope", sizes, target=None)
        own = peers.spec_bytes(peers.input_specs(b)) + peers.spec_bytes(peers.output_specs(b))
        self.assertEqual(peers.peer_bytes(b), own + peers.peer_bytes(f))
        self.assertEqual(peers.forward_job(b)["options"]["round_norm"], "false")
        self.assertNotIn("dx", peers.forward_job(b)["options"])

    def test_verify_outputs(self):
        specs = [("q", (2, 3), "float8_e4m3fn"), ("inv_scale", (2,), "float32")]
        ok = (FT([0] * 6, (2, 3), float8_e4m3fn), FT([1, 1], (2,), float32))
        self.assertIsNone(peers.verify_outputs(ok, specs))
        self.assertIn("2 outputs, want 3", peers.verify_outputs(ok, specs + [("x", (), "float32")]))
        self.assertIn("returned FT outputs, want 2", peers.verify_outputs(ok[0], specs))
        bad = (FT([0] * 6, (3, 2), float8_e4m3fn), FT([1, 1], (2,), bfloat16))
        msg = peers.verify_outputs(bad, specs)
        self.assertIn("q is float8_e4m3fn[3, 2], want float8_e4m3fn[2, 3]", msg)
        self.assertIn("inv_scale is bfloat16[2], want float32[2]", msg)


class TestData(unittest.TestCase):
    def test_group_sizes(self):
        for t, e in [(1, 1), (7, 3), (5, 8), (130, 4), (65536, 8), (16384, 64), (2, 2), (3, 3)]:
            for seed in range(5):
                with self.subTest(t=t, e=e, seed=seed):
                    sizes = peers.group_sizes(t, e, random.Random(seed))
                    self.assertEqual(len(sizes), e)
                    self.assertEqual(sum(sizes), t)
                    self.assertTrue(all(s >= 0 for s in sizes))
                    if e >= 3:
                        self.assertIn(0, sizes)
                    ends = peers.cumulative(sizes)
                    self.assertEqual(ends[-1], t)
                    self.assertEqual(ends, sorted(ends))
        self.assertEqual(peers.group_sizes(1000, 7, random.Random(3)), peers.group_sizes(1000, 7, random.Random(3)))

    def test_job_seed(self):
        a = job("rowwise_cast", {"M": 4, "K": 4})
        b = job("rowwise_cast", {"M": 4, "K": 4}, pow2="true")
        self.assertEqual(peers.job_seed(a), peers.job_seed(dict(a)))
        self.assertNotEqual(peers.job_seed(a), peers.job_seed(b))
        self.assertEqual(peers.job_seed(a), 1842352291)  # fixed across runs and Python versions

    def test_rope_pair_index(self):
        self.assertEqual(peers.rope_pair_index(8, "neox"), [0, 1, 2, 3, 0, 1, 2, 3])
        self.assertEqual(peers.rope_pair_index(8, "gptj"), [0, 0, 1, 1, 2, 2, 3, 3])

    def test_copies_and_copy_size(self):
        l2 = 50 * 2**20
        self.assertEqual(peers.n_copies(201359360, l2), 1)
        self.assertEqual(peers.n_copies(2 * l2, l2), 1)
        self.assertEqual(peers.n_copies(2 * l2 - 1, l2), 2)
        self.assertEqual(peers.n_copies(20 * 2**20, l2), 5)
        self.assertEqual(peers.n_copies(1, l2), peers.MAX_COPIES)
        self.assertEqual(peers.copy_size(201359360), 100679680)
        self.assertEqual(peers.copy_size(201326597), 100663299)

    def test_cycling(self):
        seen = []
        call = peers.cycling(lambda a, b: seen.append((a, b)), [(1, 2), (3, 4)])
        for _ in range(5):
            call()
        self.assertEqual(seen, [(1, 2), (3, 4), (1, 2), (3, 4), (1, 2)])


class TestRows(unittest.TestCase):
    common = {"gpu": "NVIDIA H200", "date": "2026-12-02", "torch": "2.11.0+cu130"}

    def test_make_row(self):
        j = job("rowwise_cast", {"M": 8192, "K": 8192})
        r = peers.make_row(j, "compiled", 70.0, j["ideal_bytes"], 3800.0, self.common, compile_mode="default",
                           note=None)
        self.assertEqual(list(r)[:7], ["op", "shape", "impl", "time_us", "bytes", "gb_per_s", "pct_copy"])
        self.assertEqual((r["op"], r["shape"], r["impl"], r["bytes"]), ("rowwise_cast", "8192x8192", "compiled",
                                                                       201359360))
        self.assertAlmostEqual(r["gb_per_s"], 201359360 / 70.0 / 1e3)
        self.assertAlmostEqual(r["pct_copy"], 100 * r["gb_per_s"] / 3800.0)
        self.assertEqual((r["gpu"], r["date"], r["torch"], r["fp8"], r["compile_mode"]),
                         ("NVIDIA H200", "2026-12-02", "2.11.0+cu130", "e4m3fn", "default"))
        self.assertEqual(r["options"], {"in": "bf16", "fp8": "e4m3", "pow2": "false"})
        self.assertNotIn("note", r)
        self.assertNotIn("error", r)
        r = peers.make_row(j, "eager", None, 10, None, self.common, error="OOM")
        self.assertEqual((r["time_us"], r["gb_per_s"], r["pct_copy"], r["error"]), (None, None, None, "OOM"))
        r = peers.make_row(j, "eager", 5.0, 10, None, self.common)
        self.assertEqual((r["gb_per_s"], r["pct_copy"]), (10 / 5.0 / 1e3, None))
        self.assertIsNone(peers.make_row(j, "eager", math.nan, 10, 1.0, self.common)["time_us"])

    def test_table(self):
        j = job("rowwise_cast", {"M": 8192, "K": 8192})
        rows = [peers.make_row(j, "copy", 52.4, 201359360, 3842.7, self.common),
                peers.make_row(j, "eager", None, 201359360, None, self.common, error="boom")]
        lines = peers.format_table(rows)
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[0].startswith("op "))
        self.assertIn("52.4", lines[1])
        self.assertIn("100.0", lines[1])
        self.assertTrue(lines[2].endswith("error"))
        self.assertIn("-", lines[2])
        self.assertIn("ERROR boom", peers.row_line(rows[1]))
        self.assertEqual(len(peers.format_table([])), 1)

    def test_short_error(self):
        e = RuntimeError("InductorError: bad\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace\n"
                         "You can suppress this exception\nthe real cause")
        self.assertEqual(peers.short_error(e), "RuntimeError: InductorError: bad ... the real cause")
        self.assertEqual(peers.short_error(ValueError("x")), "ValueError: x")
        self.assertLessEqual(len(peers.short_error(ValueError("y" * 2000))), 500)

    def test_write_json(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "out.json")
            peers.write_json(p, [])
            with open(p) as f:
                self.assertEqual(json.load(f), [])
            rows = [peers.make_row(job("rowwise_cast", {"M": 2, "K": 2}), "eager", 1.5, 10, None, self.common)]
            peers.write_json(p, rows)
            with open(p) as f:
                self.assertEqual(json.load(f), rows)
            self.assertEqual(os.listdir(d), ["out.json"])  # no temporary left
            with self.assertRaises(ValueError):
                peers.write_json(p, [{"time_us": math.inf}])
            with open(p) as f:
                self.assertEqual(json.load(f), rows)  # a failed write leaves the last good file


# ---- the peers' maths on FakeTorch ----


class TestFakeTorch(unittest.TestCase):
    """The stand-in itself, where the references lean on it."""

    def test_rounding(self):
        self.assertEqual(E4M3.max, 448.0)
        self.assertEqual(E5M2.max, 57344.0)
        self.assertEqual(E4M3.round(1.0625), 1.0)  # a tie between 1 and 1.125: the even code
        self.assertEqual(E4M3.round(1.1875), 1.25)
        self.assertEqual(E4M3.round(-300.0), -288.0)
        self.assertTrue(math.isnan(E4M3.round(1000.0)))
        self.assertEqual(E5M2.round(1.0e6), math.inf)
        self.assertEqual(E4M3.round(2.0 ** -9), 2.0 ** -9)  # the smallest subnormal
        self.assertEqual(bf16(1 + 2 ** -8), 1.0)
        self.assertEqual(bf16(1 + 3 * 2 ** -8), 1 + 2 ** -6)
        self.assertEqual(f32(0.1), struct.unpack("<f", struct.pack("<f", 0.1))[0])

    def test_indexing(self):
        x = FT(list(range(24)), (2, 3, 4), float32)
        self.assertEqual(x[:, 1].tolist(), [[4, 5, 6, 7], [16, 17, 18, 19]])
        self.assertEqual(x[..., 1::2].shape, (2, 3, 2))
        self.assertEqual(x[..., 1::2].tolist()[0][0], [1, 3])
        self.assertEqual(x[None, :, None].shape, (1, 2, 1, 3, 4))
        self.assertEqual(x[1, :, 2:].tolist(), [[14, 15], [18, 19], [22, 23]])
        self.assertEqual(x.transpose(1, 2).tolist()[0][1], [1, 5, 9])
        self.assertEqual(x[FT([1, 0, 1], (3,), int64)].shape, (3, 3, 4))
        self.assertEqual(x.amax(dim=1).tolist(), [[8, 9, 10, 11], [20, 21, 22, 23]])


class TestPeerMaths(unittest.TestCase):
    def setUp(self):
        self.fake = make_fake_torch()
        self.ctx = fake_torch_in_peers(self.fake)
        self.ctx.__enter__()
        self.rng = random.Random(1)

    def tearDown(self):
        self.ctx.__exit__(None, None, None)

    def run_both(self, j, *args):
        """The eager and compiled peers' outputs (compiled: torch.compile is the identity here)."""
        p = peers.make_peer(j)
        outs = [p.eager(*args), p.compile("default")(*args)]
        for o in outs:
            self.assertIsNone(peers.verify_outputs(o, peers.output_specs(j)))
        return outs

    def cast_options(self):
        for fam, dt, pow2 in itertools.product(("e4m3", "e5m2"), ("bf16", "f32"), ("false", "true")):
            yield {"fp8": fam, "in": dt, "pow2": pow2}

    def fmt_of(self, j):
        return {"e4m3fn": E4M3, "e5m2": E5M2}[j["fp8"]]

    def test_rowwise_tensorwise_colwise(self):
        m, k = 5, 7
        for o in self.cast_options():
            for op in ("rowwise_cast", "tensorwise_cast", "colwise_cast"):
                with self.subTest(op=op, **o):
                    j = job(op, {"M": m, "K": k}, **o)
                    fmt = self.fmt_of(j)
                    x = randn_ft((m, k), getattr(self.fake, peers.SHORT_DTYPES[o["in"]]), self.rng)
                    x.data[3] = 0.0
                    rows = [x.data[i * k:(i + 1) * k] for i in range(m)]
                    if op == "rowwise_cast":
                        groups = [ref_cast_groups(r, fmt, fmt.max, o["pow2"] == "true") for r in rows]
                        want_q = [v for g in groups for v in g[0]]
                        want_inv = [g[1] for g in groups]
                    elif op == "tensorwise_cast":
                        q, inv = ref_cast_groups(x.data, fmt, fmt.max, o["pow2"] == "true")
                        want_q, want_inv = q, [inv]
                    else:
                        cols = [[r[c] for r in rows] for c in range(k)]
                        groups = [ref_cast_groups(col, fmt, fmt.max, o["pow2"] == "true") for col in cols]
                        want_q = [v for g in groups for v in g[0]]  # qt[K, M]: column c's values in a row
                        want_inv = [g[1] for g in groups]
                    for q, inv in self.run_both(j, x):
                        self.assertEqual(q.data, want_q)
                        self.assertEqual(inv.data, want_inv)

    def test_dual_casts_are_the_single_casts(self):
        m, k = 5, 7
        for o in self.cast_options():
            with self.subTest(**o):
                x = randn_ft((m, k), getattr(self.fake, peers.SHORT_DTYPES[o["in"]]), self.rng)
                x.data[3] = 0.0
                single = {op: self.run_both(job(op, {"M": m, "K": k}, **o), x)[0]
                          for op in ("rowwise_cast", "tensorwise_cast", "colwise_cast")}
                for q, qt, inv in self.run_both(job("tensorwise_cast_transpose", {"M": m, "K": k}, **o), x):
                    self.assertEqual(q.data, single["tensorwise_cast"][0].data)
                    self.assertEqual(qt.tolist(), [list(r) for r in zip(*q.tolist())])
                    self.assertEqual(inv.data, single["tensorwise_cast"][1].data)
                for q, inv_row, qt, inv_col in self.run_both(job("rowcol_cast", {"M": m, "K": k}, **o), x):
                    self.assertEqual(q.data, single["rowwise_cast"][0].data)
                    self.assertEqual(inv_row.data, single["rowwise_cast"][1].data)
                    self.assertEqual(qt.data, single["colwise_cast"][0].data)
                    self.assertEqual(inv_col.data, single["colwise_cast"][1].data)

    def test_grouped_rowcol_is_the_single_casts(self):
        t, k = 11, 3
        for o in self.cast_options():
            for sizes in ([4, 0, 7], [11], [1] * 11):
                with self.subTest(sizes=sizes, **o):
                    e = len(sizes)
                    x = randn_ft((t, k), getattr(self.fake, peers.SHORT_DTYPES[o["in"]]), self.rng)
                    offsets = FT(peers.cumulative(sizes), (e,), int32)
                    row = self.run_both(job("rowwise_cast", {"M": t, "K": k}, **o), x)[0]
                    col = self.run_both(job("grouped_colwise_cast", {"T": t, "K": k, "E": e}, **o), x, offsets)[0]
                    for q, inv_row, qt, inv_col in self.run_both(job("grouped_rowcol_cast", {"T": t, "K": k, "E": e}, **o),
                                                                 x, offsets):
                        self.assertEqual(q.data, row[0].data)
                        self.assertEqual(inv_row.data, row[1].data)
                        self.assertEqual(qt.tolist(), col[0].tolist())
                        self.assertEqual(inv_col.data, col[1].data)

    def test_expert_colwise(self):
        e, k, n = 2, 5, 3
        for o in self.cast_options():
            for layout in ("kn", "nk"):
                with self.subTest(layout=layout, **o):
                    j = job("expert_colwise_cast", {"E": e, "K": k, "N": n}, layout=layout, **o)
                    fmt = self.fmt_of(j)
                    w = randn_ft((e, k, n), getattr(self.fake, peers.SHORT_DTYPES[o["in"]]), self.rng)
                    want_q = [[[None] * n for _ in range(k)] for _ in range(e)]
                    want_inv = []
                    for ex in range(e):
                        for c in range(n):
                            col = [w.at((ex, i, c)) for i in range(k)]
                            q, inv = ref_cast_groups(col, fmt, fmt.max, o["pow2"] == "true")
                            want_inv.append(inv)
                            for i in range(k):
                                want_q[ex][i][c] = q[i]
                    if layout == "nk":
                        want_q = [[[want_q[ex][i][c] for i in range(k)] for c in range(n)] for ex in range(e)]
                    for q, inv in self.run_both(j, w):
                        self.assertEqual(q.tolist(), want_q)
                        self.assertEqual(inv.data, want_inv)

    def test_grouped_colwise(self):
        t, k = 11, 3
        for o in self.cast_options():
            for sizes in ([4, 0, 7], [11], [0, 0, 11], [3, 3, 0, 5], [11, 0], [1] * 11):
                with self.subTest(sizes=sizes, **o):
                    e = len(sizes)
                    j = job("grouped_colwise_cast", {"T": t, "K": k, "E": e}, **o)
                    fmt = self.fmt_of(j)
                    x = randn_ft((t, k), getattr(self.fake, peers.SHORT_DTYPES[o["in"]]), self.rng)
                    offsets = FT(peers.cumulative(sizes), (e,), int32)
                    want_qt = [[None] * t for _ in range(k)]
                    want_inv = []
                    lo = 0
                    for hi in offsets.data:
                        for c in range(k):
                            q, inv = ref_cast_groups([x.at((r, c)) for r in range(lo, hi)], fmt, fmt.max,
                                                     o["pow2"] == "true")
                            want_inv.append(inv)
                            for r, v in zip(range(lo, hi), q):
                                want_qt[c][r] = v
                        lo = hi
                    # eager loops over offsets.tolist(); compiled is the searchsorted form.
                    for qt, inv in self.run_both(j, x, offsets):
                        self.assertEqual(qt.tolist(), want_qt)
                        self.assertEqual(inv.data, want_inv)

    def mx_codes(self, t):
        return t.data if t.dtype is uint8 else t.view(uint8).data

    def check_mx(self, j, x, outs):
        """The peer's outputs are ref_mx's, bit for bit (q codes and scale bytes)."""
        o = j["options"]
        want = ref_mx(x, self.fmt_of(j), o["mx_round"] == "rceil", o["dim"])
        if o.get("scales") in ("swizzled", "gfx950"):
            lay = ref_mx_swizzle if o["scales"] == "swizzled" else ref_mx_gfx950
            m, k = x.shape
            for name, rows, cols in (("scale", m, k // 32), ("scale_t", k, m // 32)):
                if name in want:
                    want[name] = lay(want[name], rows, cols)
        names = [s[0] for s in peers.output_specs(j)]
        self.assertEqual(names, list(want))
        for name, t in zip(names, outs):
            got = self.mx_codes(t)
            self.assertEqual(len(got), len(want[name]), name)
            bad = [i for i, (a, b) in enumerate(zip(got, want[name])) if a != b]
            if bad:
                i = bad[0]
                self.fail(f"{name}: {len(bad)} of {len(got)} differ; first {name}.flat[{i}] is {got[i]:#04x}, "
                          f"want {want[name][i]:#04x}")

    def test_mx_cast(self):
        names = ["in", "fp8", "mx_round", "dim"]
        for m, k in ((64, 64), (32, 96)):
            for combo in itertools.product(*(peers.OPS["mx_cast"].options[n] for n in names)):
                o = dict(zip(names, combo))
                with self.subTest(m=m, k=k, **o):
                    j = job("mx_cast", {"M": m, "K": k}, **o)
                    x = mx_input(m, k, getattr(self.fake, peers.SHORT_DTYPES[o["in"]]), self.fmt_of(j).max, self.rng)
                    for outs in self.run_both(j, x):
                        self.check_mx(j, x, outs)
                    scales = set(outs[1].data)  # the planted blocks reach both ends of E8M0
                    self.assertTrue({0, 0xFF} <= scales, sorted(scales))

    def test_mx_cast_swizzled(self):
        # 160 rows and 96 columns: two row tiles (the second mostly padding)
        # along M, and 3 or 5 blocks a row, padded to 4 or 8.
        for dim in ("0", "1", "both"):
            for m, k in ((160, 96), (32, 160)):
                with self.subTest(dim=dim, m=m, k=k):
                    j = job("mx_cast", {"M": m, "K": k}, dim=dim, scales="swizzled")
                    x = mx_input(m, k, self.fake.bfloat16, self.fmt_of(j).max, self.rng)
                    specs = dict((n, shape) for n, shape, _ in peers.output_specs(j))
                    for outs in self.run_both(j, x):
                        self.check_mx(j, x, outs)
                        for (name, shape), t in zip(specs.items(), outs):
                            self.assertEqual(t.shape, shape, name)
        j = job("mx_cast", {"M": 160, "K": 96}, dim="both", scales="swizzled")
        self.assertEqual([s[1] for s in peers.output_specs(j)], [(160, 96), (256 * 4,), (96, 160), (128 * 8,)])

    def test_grouped_mx_cast(self):
        # Groups empty, shorter than a block, at a block's edge and past
        # it; the planted blocks' rows (the last 32) cross group ends.
        # Under scales=swizzled: groups of 1, 4 and 5 blocks (padded to 4 or
        # 8 columns), K past a tile of 128 rows.
        t, k = 64, 64
        for sizes, o in ((([20, 0, 44]), {}), ([64], {"mx_round": "rceil", "fp8": "e5m2"}),
                         ([32, 1, 31], {"in": "f32"}), ([0, 64, 0], {"mx_round": "rceil"}),
                         ([20, 0, 44], {"scales": "swizzled"}), ([0, 64, 0], {"scales": "swizzled"})):
            with self.subTest(sizes=sizes, **o):
                e = len(sizes)
                j = job("grouped_mx_cast", {"T": t, "K": k, "E": e}, **o)
                fmt = self.fmt_of(j)
                x = mx_input(t, k, getattr(self.fake, peers.SHORT_DTYPES[j["options"]["in"]]), fmt.max, self.rng)
                offsets = FT(peers.cumulative(sizes), (e,), int32)
                tp = -(-(t + 31 * e) // 32) * 32
                self.assertEqual(peers.output_specs(j)[0][1], (k, tp))
                qt, st, ends = [0] * (k * tp), [0] * (k * tp // 32), []
                lo, col = 0, 0
                for hi in offsets.data:
                    for b in range(lo, hi, 32):
                        for c in range(k):
                            vals = [x.at((r, c)) if r < hi else 0.0 for r in range(b, b + 32)]
                            byte, codes = ref_mx_block(vals, fmt, j["options"]["mx_round"] == "rceil")
                            st[c * tp // 32 + (col + b - lo) // 32] = byte
                            qt[c * tp + col + b - lo:c * tp + col + b - lo + 32] = codes
                    col += -(-(hi - lo) // 32) * 32
                    ends.append(col)
                    lo = hi
                if j["options"]["scales"] == "swizzled":
                    st, widths = ref_group_swizzle(st, k, tp // 32, ends, peers.grouped_mx_scale_cols(t, e))
                for outs in self.run_both(j, x, offsets):
                    self.assertEqual(self.mx_codes(outs[0]), qt)
                    self.assertEqual(self.mx_codes(outs[1]), st)
                    self.assertEqual(outs[2].data, ends)
                    if j["options"]["scales"] == "swizzled":
                        self.assertEqual(outs[3].data, widths)

    def test_grouped_mx_swizzled_layout(self):
        # Groups of 1 and 5 blocks at K = 130 (two tiles of 128 rows): each
        # group's bytes are the swizzled matrix of its own scales, the second
        # group's from byte 256 * 4 on; the rest is 0.
        k, cols, ends = 130, 8, [32, 192]
        st = [(r * 7 + c * 3) % 251 + 1 for r in range(k) for c in range(cols)]
        got, widths = ref_group_swizzle(st, k, cols, ends, 16)
        self.assertEqual(widths, [4, 12])
        self.assertEqual(len(got), 256 * 16)
        g0 = ref_mx_swizzle([st[r * cols] for r in range(k)], k, 1)
        g1 = ref_mx_swizzle([st[r * cols + 1 + c] for r in range(k) for c in range(5)], k, 5)
        self.assertEqual((len(g0), len(g1)), (256 * 4, 256 * 8))
        self.assertEqual(got[:256 * 4], g0)
        self.assertEqual(got[256 * 4:256 * 12], g1)
        self.assertEqual(set(got[256 * 12:]), {0})

    def test_mx_cast_gfx950_scales(self):
        # 96 rows: three 32-row tiles along M; 3 or 5 blocks a row, padded to 8.
        for dim in ("0", "1", "both"):
            for m, k in ((96, 96), (32, 160)):
                with self.subTest(dim=dim, m=m, k=k):
                    j = job("mx_cast", {"M": m, "K": k}, dim=dim, scales="gfx950")
                    x = mx_input(m, k, self.fake.bfloat16, self.fmt_of(j).max, self.rng)
                    for outs in self.run_both(j, x):
                        self.check_mx(j, x, outs)
        j = job("mx_cast", {"M": 96, "K": 160}, dim="both", scales="gfx950")
        self.assertEqual([s[1] for s in peers.output_specs(j)], [(96, 160), (96 * 8,), (160, 96), (160 * 8,)])

    def test_mx_gfx950_reference(self):
        # One tile, read off the layout's definition: byte 4n + 2h + g is
        # S[16g + n, 4h] for the first column quarter (n < 16).
        s = list(range(32 * 8))  # S[r, c] = 8r + c
        got = ref_mx_gfx950(s, 32, 8)
        self.assertEqual(got[:8], [0, 128, 4, 132, 8, 136, 12, 140])
        self.assertEqual(got[64:66], [1, 129])
        self.assertEqual(sorted(got), s)
        self.assertEqual(ref_mx_gfx950([7], 1, 1), [7] + [0] * 255)

    def test_mx_swizzle_reference(self):
        # The layout's definition, read off torchao's to_blocked for one tile:
        # row r's four bytes at 16 (r % 32) + 4 (r // 32).
        s = list(range(128 * 4))
        got = ref_mx_swizzle(s, 128, 4)
        self.assertEqual(got[:8], [0, 1, 2, 3, 128, 129, 130, 131])
        self.assertEqual(got[16:20], [4, 5, 6, 7])
        self.assertEqual(sorted(got), s)
        self.assertEqual(ref_mx_swizzle([7], 1, 1), [7] + [0] * 511)

    def test_mx_reference_rceil_is_ceil_log2_but_at_2_to_the_minus_127(self):
        # ops/mx.go: rceil is ceil(log2(amax / fmax)) exactly, the f32
        # product never crossing a power of two. In the normal range it holds
        # (fmax · 2^k and its f32 neighbours); at k = -127 the descale is an
        # f32 subnormal, rounded to 2^-149, and one ulp above fmax · 2^-127
        # rounds down to 2^-127: byte 0, where the exact quotient gives 1.
        for fmt in (E4M3, E5M2):
            for kk in range(-127, 110):
                for n in (-2, -1, 0, 1, 2):
                    amax = f32_from_bits(f32_bits(fmt.max * 2.0 ** kk) + n)
                    x = -127
                    while fmt.max * 2.0 ** x < amax:  # exact
                        x += 1
                    with self.subTest(fmax=fmt.max, k=kk, ulps=n):
                        got = ref_mx_block([amax], fmt, True)[0] - 127
                        self.assertEqual(got, x - 1 if (kk, n) == (-127, 1) else x)

    def test_mx_cast_catches_the_log2_trap(self):
        # A peer taking X from torch.log2, whose f32 result rounds up to k
        # just below 2^k (floor) or down to k just above it (rceil's
        # ceil(log2(descale))), fails on the planted blocks; the peer passes.
        m, k = 32, 64
        for rnd in ("floor", "rceil"):
            with self.subTest(mx_round=rnd):
                j = job("mx_cast", {"M": m, "K": k}, mx_round=rnd, **{"in": "f32"})
                x = mx_input(m, k, float32, E4M3.max, self.rng)
                self.check_mx(j, x, peers.make_peer(j).eager(x))
                fake, fmax = self.fake, E4M3.max

                def log2_peer(x):
                    xb = x.float().reshape(m, k // 32, 32)
                    amax = xb.abs().amax(dim=-1)
                    finite = amax.clamp(max=3.4e38) == amax  # not NaN nor Inf
                    a = fake.where(finite, amax, 1.0).clamp(min=2.0 ** -126)
                    if rnd == "floor":
                        e = fake.floor(fake.log2(a)) - 8
                    else:
                        e = fake.floor(fake.log2(a * f32(1 / fmax)) * -1.0) * -1.0  # ceil
                    s = fake.where(finite, (e + 127).clamp(min=0), 255.0).to(int32)
                    y = xb * ((254 - s) << 23).view(float32)[..., None]
                    y = fake.where((s == 255)[..., None], math.nan, y)
                    return y.clamp(-fmax, fmax).to(float8_e4m3fn).reshape(m, k), s.to(uint8)

                with self.assertRaisesRegex(AssertionError, "(q|scale): [1-9]"):
                    self.check_mx(j, x, log2_peer(x))

    def check_block(self, j, x, outs):
        """The peer's outputs are ref_block_cast's: fp8 codes and inv_scale's f32 bits equal."""
        o = j["options"]
        want = ref_block_cast(x, self.fmt_of(j), o["pow2"] == "true", o["block"])
        if o.get("scales") == "colmajor":
            m, k = x.shape
            want["inv_scale"] = ref_block_colmajor(want["inv_scale"], m, -(-k // 128), self.fmt_of(j),
                                                   o["pow2"] == "true")
        names = [s[0] for s in peers.output_specs(j)]
        self.assertEqual(names, list(want))
        for name, t in zip(names, outs):
            got = t.view(uint8).data if t.dtype.size == 1 else [f32_bits(v) for v in t.data]
            exp = want[name] if t.dtype.size == 1 else [f32_bits(v) for v in want[name]]
            self.assertEqual(len(got), len(exp), name)
            bad = [i for i, (a, b) in enumerate(zip(got, exp)) if a != b]
            if bad:
                i = bad[0]
                self.fail(f"{name}: {len(bad)} of {len(got)} differ; first {name}.flat[{i}] is {got[i]:#x}, "
                          f"want {exp[i]:#x}")

    def test_block_cast(self):
        # Every option on shapes with partial blocks along K, along M and
        # both (3x200: one row block of 3; 131x130: four partial tiles), and
        # 128x128 (whole blocks, no padding); the blocks planted with each
        # kind of block_kinds in turn, carried on from run to run so that
        # the few tiles see every kind too. The small shape takes every
        # combination; the two larger (FakeTorch works element by element)
        # every block, fp8 and pow2 with the input dtypes taken in turn.
        names = ["in", "fp8", "pow2", "block"]
        start, used = {}, {}
        ins = peers.OPS["block_cast"].options["in"]
        rest = list(itertools.product(*(peers.OPS["block_cast"].options[n] for n in names[1:])))
        every = [(d,) + r for d in ins for r in rest]
        in_turn = [(ins[j % len(ins)],) + r for j, r in enumerate(rest)]
        for m, k, combos in ((3, 200, every), (131, 130, in_turn), (128, 128, in_turn)):
            for combo in combos:
                o = dict(zip(names, combo))
                with self.subTest(m=m, k=k, **o):
                    j = job("block_cast", {"M": m, "K": k}, **o)
                    blk = o["block"]
                    x, kinds = block_input(m, k, getattr(self.fake, peers.SHORT_DTYPES[o["in"]]), self.fmt_of(j),
                                           blk, self.rng, start.get(blk, 0))
                    start[blk] = start.get(blk, 0) + len(block_elements(m, k, blk))
                    used.setdefault(blk, set()).update(kinds)
                    # eager alone: torch.compile is the identity here, run_both would
                    # run the same function twice (test_block_cast_by_hand runs both)
                    outs = peers.make_peer(j).eager(x)
                    self.assertIsNone(peers.verify_outputs(outs, peers.output_specs(j)))
                    self.check_block(j, x, outs)
        for blk, kinds in used.items():
            self.assertEqual(kinds, set(block_kinds(E4M3)), blk)

    def test_block_cast_colmajor(self):
        # M = 3 and 130 (padded to 4 and 132), K with a partial block.
        for m, k in ((3, 200), (130, 300)):
            for pow2 in ("false", "true"):
                with self.subTest(m=m, k=k, pow2=pow2):
                    j = job("block_cast", {"M": m, "K": k}, pow2=pow2, scales="colmajor")
                    x, _ = block_input(m, k, self.fake.bfloat16, self.fmt_of(j), "1x128", self.rng, 0)
                    specs = peers.output_specs(j)
                    self.assertEqual(specs[1][1], (-(-k // 128), -(-m // 4) * 4))
                    outs = peers.make_peer(j).eager(x)
                    self.assertIsNone(peers.verify_outputs(outs, specs))
                    self.check_block(j, x, outs)
        for blk in ("128x1", "128x128"):
            with self.assertRaisesRegex(peers.JobError, "scales=colmajor is block=1x128's layout"):
                peers.validate_job({"op": "block_cast", "shape": "s", "sizes": {"M": 128, "K": 128}, "fp8": "e4m3fn",
                                    "options": {"block": blk, "scales": "colmajor"}, "ideal_bytes": 1}, 0)

    def test_block_cast_by_hand(self):
        # A few blocks worked out by hand, the reference's rules spelled out:
        # x[2, 130] in 1x128 blocks, e4m3, bf16: row 0's first block holds an
        # Inf (scale 0: finite elements 0 with their signs, the Inf NaN,
        # inv_scale Inf), its second (2 elements) zeros (amax floored at
        # 1e-12); row 1's first has amax 448 (scale 1: the tie 1.0625 to
        # 1.0, 1.1875 to 1.25) and its second amax 7 (scale 64; pow2 64 too).
        e4 = E4M3.code
        row0 = [math.inf, -1.0, 2.0] + [0.5] * 125 + [0.0, -0.0]
        row1 = [-448.0, 1.0625, 1.1875, -3.0] + [0.0] * 124 + [7.0, -3.5]
        x = FT(row0 + row1, (2, 130), bfloat16)
        for pow2 in ("false", "true"):
            with self.subTest(pow2=pow2):
                j = job("block_cast", {"M": 2, "K": 130}, pow2=pow2)
                for q, inv in self.run_both(j, x):
                    codes = q.view(uint8).data
                    self.assertEqual(codes[:3], [E4M3.nan_code, 0x80, 0x00])
                    self.assertEqual(set(codes[3:128]), {0x00})
                    self.assertEqual(codes[128:130], [0x00, 0x80])
                    self.assertEqual(codes[130:134], [e4(-448.0), e4(1.0), e4(1.25), e4(-3.0)])
                    self.assertEqual(codes[258:260], [e4(448.0), e4(-224.0)])
                    eps_scale = f32(448.0 / f32(1e-12))
                    if pow2 == "true":
                        eps_scale = 2.0 ** 48  # 4.48e14 = 1.59 · 2^48
                    self.assertEqual(inv.data, [math.inf, f32(1 / eps_scale), 1.0, 1 / 64])
                    self.assertEqual(ref_block_cast(x, E4M3, pow2 == "true", "1x128")["inv_scale"], inv.data)

    def test_block_cast_nan_is_where_torch_and_go_differ(self):
        # ops/blockwise.go takes amax by maxNum: a NaN is ignored, its block
        # scaled by the other elements, the NaN alone NaN. The peer takes it
        # by torch.amax, as every cast peer here does, and torch.amax
        # propagates a NaN: the whole block NaN, inv_scale NaN. So
        # test_block_cast plants no NaN (nor do the casts' tests); this pins
        # the difference down.
        x = FT([1.0, math.nan, -2.0] + [0.25] * 125 + [3.0, 4.0], (1, 130), float32)
        want = ref_block_cast(x, E4M3, False, "1x128")
        self.assertEqual(want["inv_scale"], [f32(1 / f32(448.0 / 2.0)), f32(1 / f32(448.0 / 4.0))])
        self.assertEqual(want["q"][1], E4M3.nan_code)
        self.assertEqual(want["q"][0], E4M3.code(224.0))
        for q, inv in self.run_both(job("block_cast", {"M": 1, "K": 130}, **{"in": "f32"}), x):
            self.assertTrue(math.isnan(inv.data[0]))
            self.assertEqual(set(q.view(uint8).data[:128]), {E4M3.nan_code})
            self.assertEqual(inv.data[1], want["inv_scale"][1])  # the NaN-free block agrees
            self.assertEqual(q.view(uint8).data[128:], want["q"][128:])
        row = self.run_both(job("rowwise_cast", {"M": 1, "K": 130}, **{"in": "f32"}), x)[0]
        self.assertTrue(math.isnan(row[1].data[0]))  # rowwise_cast's peer: the same

    def test_block_cast_pow2_log2_trap(self):
        # pow2 as the cast peers write it, exp2(floor(log2(scale))), with
        # log2's result an f32: for a scale a few ulps below 2^k (|k| >= 2)
        # it rounds to k, and the peer's scale is 2^k where Go's Pow2Floor
        # (exact) gives 2^(k-1). Only f32 inputs reach it (a bf16 amax is
        # a 2^-7 step from fmax · 2^j, too far to round so); the block peer
        # does as rowwise_cast's peer does, and both differ from Go here.
        a = f32_from_bits(f32_bits(7.0) + 1)  # 448 / a: one ulp below 64
        self.assertEqual(f32_bits(f32(448.0 / a)), f32_bits(64.0) - 1)
        x = FT([a] + [1.0] * 127, (1, 128), float32)
        want = ref_block_cast(x, E4M3, True, "1x128")
        self.assertEqual(want["inv_scale"], [1 / 32])  # Go: Pow2Floor(64 - ulp) = 32
        j = job("block_cast", {"M": 1, "K": 128}, pow2="true", **{"in": "f32"})
        for q, inv in self.run_both(j, x):
            self.assertEqual(inv.data, [1 / 64])  # the peer: 64
            self.assertEqual(q.view(uint8).data[0], E4M3.code(448.0))  # a · 64 > 448: saturated
        row = self.run_both(job("rowwise_cast", {"M": 1, "K": 128}, pow2="true", **{"in": "f32"}), x)[0]
        self.assertEqual(row[1].data, [1 / 64])
        self.assertEqual(row[0].data, q.data)

    def qk_inputs(self, j):
        s = j["sizes"]
        o = j["options"]
        fake = self.fake
        tok = peers.token_dims(j)
        w = fake.float32 if o["weight"] == "f32" else fake.bfloat16
        d = s["D"]
        qkv = randn_ft(tok + ((s["HQ"] + 2 * s["HKV"]) * d,), fake.bfloat16, self.rng, 1.0)
        # Heads whose mean square is near eps, where eps = 1e-6 and 1e-5 differ: the first
        # query head and the first key head of the first token.
        g = s["HQ"] // s["HKV"]
        for h in (0, g):
            for i in range(h * d, (h + 1) * d):
                qkv.data[i] = bf16(qkv.data[i] * 2e-3)
        qw = FT([1 + 0.1 * self.rng.gauss(0, 1) for _ in range(d)], (d,), w)
        kw = FT([1 + 0.1 * self.rng.gauss(0, 1) for _ in range(d)], (d,), w)
        inv_freq = [f32(10000.0 ** (-2 * i / d)) for i in range(d // 2)]
        pair = peers.rope_pair_index(d, o["rope"])
        if o["angles"] == "theta":
            angles = (FT(inv_freq, (d // 2,), float32),)
            trig = [[(math.cos(f32(p * inv_freq[pair[i]])), math.sin(f32(p * inv_freq[pair[i]])))
                     for i in range(d)] for p in range(s["S"])]
        else:
            cs = [[math.cos(p * 10000.0 ** (-2 * pair[i] / d)) for i in range(d)] for p in range(s["S"])]
            sn = [[math.sin(p * 10000.0 ** (-2 * pair[i] / d)) for i in range(d)] for p in range(s["S"])]
            angles = (FT([v for r in cs for v in r], (s["S"], d), float32),
                      FT([v for r in sn for v in r], (s["S"], d), float32))
            trig = [[(f32(cs[p][i]), f32(sn[p][i])) for i in range(d)] for p in range(s["S"])]
        return (qkv, qw, kw) + angles, trig

    def ref_qk(self, j, qkv, qw, kw, trig):
        """ops/qknorm.go's qkForward, per head row: f32 steps in its order, bf16 outputs."""
        s, o = j["sizes"], j["options"]
        b, sl, hq, hkv, d = s["B"], s["S"], s["HQ"], s["HKV"], s["D"]
        g = hq // hkv
        eps = f32(float(o["eps"]))
        ntok = b * sl
        width = (hq + 2 * hkv) * d
        q = [[None] * d for _ in range(ntok * hq)]
        k = [[None] * d for _ in range(ntok * hkv)]
        v = [[None] * d for _ in range(ntok * hkv)]
        for tok in range(ntok):
            pos = tok % sl if o["order"] == "bshd" else tok // b
            for u in range(hkv * (g + 2)):
                grp, jj = divmod(u, g + 2)
                t = qkv.data[tok * width + u * d: tok * width + (u + 1) * d]
                if jj == g + 1:
                    v[tok * hkv + grp] = list(t)
                    continue
                w = (qw if jj < g else kw).data
                ss = f32(math.fsum(f32(x * x) for x in t))
                r = f32(1 / f32(math.sqrt(f32(f32(ss / d) + eps))))
                n = [f32(f32(t[i] * r) * w[i]) for i in range(d)]
                if o.get("round_norm") == "true":
                    n = [bf16(x) for x in n]
                y = []
                for i in range(d):
                    if o["rope"] == "neox":
                        p, sign = (i + d // 2, -1) if i < d // 2 else (i - d // 2, 1)
                    else:
                        p, sign = (i + 1, -1) if i % 2 == 0 else (i - 1, 1)
                    c, sn = trig[pos][i]
                    y.append(bf16(f32(f32(n[i] * c) + f32(sign * n[p] * sn))))
                if jj < g:
                    q[tok * hq + grp * g + jj] = y
                else:
                    k[tok * hkv + grp] = y
        return q, k, v

    def assert_close(self, got, want):
        """Equal but for rare one-ulp differences (1/sqrt is rounded once here, twice in Go)."""
        off = 0
        for a, b in zip(got, want):
            if a != b:
                off += 1
                self.assertLessEqual(abs(a - b), 2.0 ** -7 * max(abs(a), abs(b)), (a, b))
        self.assertLessEqual(off, max(2, len(want) // 50), f"{off} of {len(want)} differ")

    def test_qk_norm_rope(self):
        sizes = {"B": 2, "S": 3, "HQ": 4, "HKV": 2, "D": 8}
        names = ["order", "rope", "weight", "eps", "angles", "round_norm"]
        values = [peers.OPS["qk_norm_rope"].options[n] for n in names]
        for combo in itertools.product(*values):
            o = dict(zip(names, combo))
            with self.subTest(**o):
                j = job("qk_norm_rope", sizes, target=None, **o)
                args, trig = self.qk_inputs(j)
                want_q, want_k, want_v = self.ref_qk(j, args[0], args[1], args[2], trig)
                for q, k, v in self.run_both(j, *args):
                    self.assert_close(q.data, [x for r in want_q for x in r])
                    self.assert_close(k.data, [x for r in want_k for x in r])
                    self.assertEqual(v.data, [x for r in want_v for x in r])  # v is copied

    def test_qk_norm_rope_catches_a_wrong_split(self):
        # The reference is sharp enough to tell the heads apart: q against k's slot fails.
        j = job("qk_norm_rope", {"B": 1, "S": 2, "HQ": 2, "HKV": 1, "D": 8}, target=None)
        args, trig = self.qk_inputs(j)
        want_q, want_k, _ = self.ref_qk(j, args[0], args[1], args[2], trig)
        q, k, _ = peers.make_peer(j).eager(*args)
        self.assert_close(q.data[:8], want_q[0])
        with self.assertRaises(AssertionError):
            self.assert_close(k.data[:8], want_q[0])

    def test_qk_norm_rope_bwd_wiring(self):
        sizes = {"B": 2, "S": 3, "HQ": 4, "HKV": 2, "D": 8}
        for order, angles, dx, weight in itertools.product(("bshd", "sbhd"), ("table", "theta"), ("bf16", "f32"),
                                                           ("bf16", "f32")):
            with self.subTest(order=order, angles=angles, dx=dx, weight=weight):
                j = job("qk_norm_rope_bwd", sizes, target=None, order=order, angles=angles, dx=dx, weight=weight)
                fwd_job = peers.forward_job(j)
                args, _ = self.qk_inputs(fwd_job)
                tok = peers.token_dims(j)
                grads = (randn_ft(tok + (4, 8), bfloat16, self.rng), randn_ft(tok + (2, 8), bfloat16, self.rng),
                         randn_ft(tok + (2, 8), bfloat16, self.rng))
                self.fake.calls["grad"].clear()
                self.run_both(j, *args, *grads)  # verify_outputs holds shapes and dtypes
                want_inputs = (args[0].shape, (8,), (8,))
                self.assertEqual(self.fake.calls["grad"], [want_inputs, want_inputs])

    def test_make_inputs(self):
        dev = self.fake.device("cuda")
        for j in [job("rowwise_cast", {"M": 3, "K": 4}, **{"in": "f32"}),
                  job("block_cast", {"M": 3, "K": 130}, block="128x1"),
                  job("expert_colwise_cast", {"E": 2, "K": 3, "N": 2}),
                  job("grouped_colwise_cast", {"T": 20, "K": 2, "E": 4}),
                  job("qk_norm_rope", {"B": 1, "S": 3, "HQ": 2, "HKV": 1, "D": 8}, target=None, rope="gptj"),
                  job("qk_norm_rope_bwd", {"B": 2, "S": 2, "HQ": 2, "HKV": 1, "D": 4}, target=None, angles="theta",
                      order="sbhd")]:
            with self.subTest(op=j["op"]):
                ins = peers.make_inputs(j, dev)
                specs = peers.input_specs(j)
                self.assertIsNone(peers.verify_outputs(ins, specs))
                again = peers.make_inputs(j, dev)
                self.assertEqual([t.data for t in ins], [t.data for t in again])  # deterministic
                named = dict(zip([s[0] for s in specs], ins))
                if "offsets" in named:
                    ends = named["offsets"].data
                    self.assertEqual(ends[-1], 20)
                    self.assertEqual(ends, sorted(ends))
                    self.assertIn(0, [b - a for a, b in zip([0] + ends, ends)])  # an empty group
                if "cos" in named:
                    d = j["sizes"]["D"]
                    c = named["cos"]
                    self.assertEqual(c.at((0, 5)), 1.0)
                    self.assertAlmostEqual(c.at((2, 2)), math.cos(2 * 10000 ** (-2 * 1 / d)), places=6)
                    self.assertEqual(c.at((2, 2)), c.at((2, 3)))  # gptj pairs 2i, 2i+1
                if "inv_freq" in named:
                    self.assertEqual(named["inv_freq"].data, [1.0, f32(0.01)])
                if "q_weight" in named:
                    self.assertTrue(all(0.5 < v < 1.5 for v in named["q_weight"].data))
        copies = peers.input_copies(peers.make_inputs(job("rowwise_cast", {"M": 4, "K": 4}), dev), 512)
        self.assertEqual(len(copies), peers.n_copies(4 * 4 * 2, 512))
        self.assertEqual(len({id(c[0]) for c in copies}), len(copies))


# ---- main() on FakeTorch ----


class TestMain(unittest.TestCase):
    def run_main(self, jobs, *argv, fake=None, triton=None):
        fake = fake or make_fake_torch()
        saved = {n: sys.modules.get(n) for n in ("torch", "triton", "triton.testing")}
        sys.modules["torch"] = fake
        if triton is None:
            sys.modules["triton"] = None  # import fails: CUDA events
            sys.modules.pop("triton.testing", None)
        else:
            sys.modules["triton"] = types.ModuleType("triton")
            sys.modules["triton.testing"] = triton
        try:
            with tempfile.TemporaryDirectory() as d:
                jp, out = os.path.join(d, "jobs.json"), os.path.join(d, "out.json")
                with open(jp, "w") as f:
                    json.dump(jobs, f)
                log = io.StringIO()
                with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                    peers.main(["--jobs", jp, "--out", out, "--rep-ms", "1", *argv])
                with open(out) as f:
                    return json.load(f), log.getvalue(), fake
        finally:
            for n, m in saved.items():
                if m is None:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = m
            peers.torch, peers.do_bench = None, None

    def tiny_jobs(self):
        specs = [("rowwise_cast", {"M": 3, "K": 4}, {}), ("tensorwise_cast", {"M": 3, "K": 4}, {"pow2": "true"}),
                 ("colwise_cast", {"M": 3, "K": 4}, {"in": "f32", "fp8": "e5m2"}),
                 ("expert_colwise_cast", {"E": 2, "K": 3, "N": 2}, {"layout": "nk"}),
                 ("grouped_colwise_cast", {"T": 9, "K": 2, "E": 3}, {}),
                 ("qk_norm_rope", {"B": 1, "S": 2, "HQ": 2, "HKV": 1, "D": 4}, {"angles": "theta"}),
                 ("qk_norm_rope_bwd", {"B": 1, "S": 2, "HQ": 2, "HKV": 1, "D": 4}, {"order": "sbhd"}),
                 ("mx_cast", {"M": 32, "K": 64}, {"dim": "both", "mx_round": "rceil"}),
                 ("block_cast", {"M": 3, "K": 130}, {"pow2": "true", "fp8": "e5m2"})]
        out = []
        for op, sizes, opts in specs:
            j = job(op, sizes, target=("e4m3fn" if peers.OPS[op].fp8 else None), **opts)
            out.append({"op": op, "shape": j["shape"], "sizes": sizes, "options": j["options"], "fp8": j["fp8"]
                        if j["fp8"] != "e5m2" else "e4m3fn", "ideal_bytes": j["ideal_bytes"]})
        return out

    def test_every_op_end_to_end(self):
        jobs = self.tiny_jobs() + [{"op": "softmax_cast", "shape": "4x4", "sizes": {"M": 4, "K": 4}, "options": {},
                                    "fp8": "e4m3fn", "ideal_bytes": 100}]
        rows, log, fake = self.run_main(jobs, "--check")
        impls = ["copy", "eager", "compiled", "autotune"]
        for jb in jobs[:-1]:
            got = [r for r in rows if (r["op"], r["shape"]) == (jb["op"], jb["shape"])]
            with self.subTest(op=jb["op"]):
                self.assertEqual([r["impl"] for r in got], impls)
                for r in got:
                    self.assertNotIn("error", r, r.get("error"))
                    self.assertEqual(r["bytes"], jb["ideal_bytes"] if r["impl"] != "copy"
                                     else 2 * peers.copy_size(jb["ideal_bytes"]))
                    self.assertEqual((r["gpu"], r["torch"]), ("Fake GPU", "0.0+fake"))
                    self.assertAlmostEqual(r["time_us"], 100000.0)
                    self.assertIsNotNone(r["pct_copy"])
                self.assertEqual([r.get("compile_mode") for r in got],
                                 [None, None, "default", "max-autotune-no-cudagraphs"])
                for r in got[2:]:
                    # identity compile: outputs match eager's bit for bit (grouped: two formulations)
                    parts = r["check"].split("; ")
                    self.assertEqual(len(parts), len(peers.output_specs(peers.validate_job(jb, 0))))
                    for p in parts:
                        n = p.split(" ")[1].split("/")
                        self.assertEqual(n[0], "0", r["check"])
        # Timed as fp8gen's bench: a FLUSH_BYTES buffer zeroed before each timed call.
        self.assertTrue(fake.calls["empty"])
        self.assertTrue(all(numel(sz) * 4 == peers.FLUSH_BYTES and dt == fake.int32 for sz, dt in fake.calls["empty"]),
                        fake.calls["empty"])
        self.assertGreaterEqual(fake.calls["zero_"], 10 * len(fake.calls["empty"]))
        colwise = [r for r in rows if r["op"] == "colwise_cast"]
        self.assertEqual({r["fp8"] for r in colwise}, {"e5m2"})  # the family from options, flavour from fp8
        qk = [r for r in rows if r["op"].startswith("qk")]
        self.assertEqual({r["fp8"] for r in qk}, {None})
        grouped = [r for r in rows if r["op"] == "grouped_colwise_cast"]
        self.assertIn("tolist", grouped[1]["note"])
        self.assertIn("searchsorted", grouped[2]["note"])
        bad = [r for r in rows if r["op"] == "softmax_cast"]
        self.assertEqual([r["impl"] for r in bad], ["eager", "compiled", "autotune"])
        self.assertTrue(all("no peer for op" in r["error"] and r["time_us"] is None for r in bad))
        self.assertEqual(fake.calls["reset"], 2 * 9 + 9)  # before each compile, after each job
        self.assertTrue(all(dyn is False for _, _, dyn in fake.calls["compile"]))
        self.assertIn("wrote 39 rows", log)  # 9 jobs x 4, and 3 error rows
        self.assertNotIn("note: peers.py counts", log)  # our byte counts agree with the jobs'

    def test_a_failing_mode_is_recorded_and_the_run_goes_on(self):
        fake = make_fake_torch(fail_modes=("max-autotune-no-cudagraphs",))
        rows, log, _ = self.run_main(self.tiny_jobs()[:2], fake=fake)
        auto = [r for r in rows if r["impl"] == "autotune"]
        self.assertEqual(len(auto), 2)
        for r in auto:
            self.assertEqual(r["error"], "RuntimeError: InductorError: fake failure of mode max-autotune-no-cudagraphs")
            self.assertIsNone(r["time_us"])
            self.assertEqual(r["compile_mode"], "max-autotune-no-cudagraphs")
        self.assertEqual(len([r for r in rows if r["impl"] == "compiled" and "error" not in r]), 2)
        self.assertNotIn("check", rows[2])

    def test_do_bench_path_and_mode_choice(self):
        calls = []

        def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
            calls.append((warmup, rep, return_mode))
            fn()
            fn()
            return 0.25

        triton = types.ModuleType("triton.testing")
        triton.do_bench = do_bench
        rows, log, fake = self.run_main(self.tiny_jobs()[:1], "--compile-modes", "max-autotune-no-cudagraphs",
                                        triton=triton)
        self.assertEqual([r["impl"] for r in rows], ["copy", "eager", "autotune"])
        self.assertEqual([r["time_us"] for r in rows], [250.0] * 3)
        self.assertEqual(calls, [(25, 1.0, "median")] * 3)
        self.assertIn("triton do_bench", log)
        self.assertEqual([m for _, m, _ in fake.calls["compile"]], ["max-autotune-no-cudagraphs"])

    def test_bad_output_shapes_are_errors(self):
        fake = make_fake_torch()
        real = peers.make_peer

        def broken(j):
            p = real(j)
            p.eager = lambda x: (x, x)  # wrong dtype, wrong shape for inv_scale
            return p

        peers.make_peer = broken
        try:
            rows, _, _ = self.run_main(self.tiny_jobs()[:1], "--compile-modes", "", fake=fake)
        finally:
            peers.make_peer = real
        self.assertEqual([r["impl"] for r in rows], ["copy", "eager"])
        self.assertIn("eager outputs: q is bfloat16[3, 4], want float8_e4m3fn[3, 4]", rows[1]["error"])

    def test_no_jobs_needs_no_torch(self):
        saved = sys.modules.get("torch")
        sys.modules["torch"] = None  # would fail to import
        try:
            with tempfile.TemporaryDirectory() as d:
                jp, out = os.path.join(d, "jobs.json"), os.path.join(d, "out.json")
                with open(jp, "w") as f:
                    f.write("[]")
                with contextlib.redirect_stdout(io.StringIO()):
                    peers.main(["--jobs", jp, "--out", out])
                with open(out) as f:
                    self.assertEqual(json.load(f), [])
                with open(jp, "w") as f:
                    json.dump([{"op": "rowwise_cast", "shape": "1x1", "sizes": {"M": 1, "K": 1}, "fp8": "e4m3fn",
                                "ideal_bytes": 7}], f)
                with self.assertRaises(SystemExit) as cm:
                    peers.main(["--jobs", jp, "--out", out])
                self.assertIn("torch does not import", str(cm.exception.code))
        finally:
            if saved is None:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = saved


if __name__ == "__main__":
    unittest.main()
