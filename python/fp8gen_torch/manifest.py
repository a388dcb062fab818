"""Reading an fp8gen export: manifest.json (format version 1), its files,
and the integer expression language its shapes, grids and constraints are
written in.

Pure Python on purpose (no torch, no numpy): a build script or a test can
check a manifest and a shape without a GPU stack. docs/manifest.md is the
spec; the Go side is package export (Parse, Validate, Check) and package
expr. Where this module is stricter than Go it says so.
"""

import hashlib
import json
import math
import os
import re

VERSION = 1  # the manifest format this reader knows

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
GRID_MAX = INT32_MAX  # a launch takes at most 2^31 - 1 blocks along an axis

# The manifest's dtypes, a row each (fp8gen's ir/types.go table, which a Go
# test holds this one to): bytes an element, the torch dtype (an attribute
# name: older torch builds lack some, and only ops that use one need it),
# the .npy descriptor. e8m0 is OCP MX's power-of-two scale byte.
DTYPE_TABLE = {
    "i32": (4, "int32", "<i4"),
    "i64": (8, "int64", "<i8"),
    "f32": (4, "float32", "<f4"),
    "bf16": (2, "bfloat16", "<u2"),
    "e4m3fn": (1, "float8_e4m3fn", "|u1"),
    "e4m3fnuz": (1, "float8_e4m3fnuz", "|u1"),
    "e5m2": (1, "float8_e5m2", "|u1"),
    "e5m2fnuz": (1, "float8_e5m2fnuz", "|u1"),
    "e8m0": (1, "float8_e8m0fnu", "|u1"),
}
DTYPES = tuple(DTYPE_TABLE)
DTYPE_BYTES = {k: v[0] for k, v in DTYPE_TABLE.items()}
FP8_FORMATS = ("e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz")
INT_DTYPES = ("i32", "i64")
ROLES = ("input", "output", "scratch")

MANIFEST_FILE = "manifest.json"


class ManifestError(ValueError):
    """A manifest or export folder this reader refuses."""


class ExprError(ValueError):
    """An expression that does not parse or does not evaluate."""


class ShapeError(ValueError):
    """A shape (or tensor) outside the manifest's class of shapes."""


# ---------------------------------------------------------------------------
# Expressions
#
# The parser mirrors Go's expr.Parse token for token (it reads UTF-8 bytes,
# as Go does, and skips only spaces) and emits postfix code as it goes, so
# that evaluation is a loop, not a recursion as deep as a long sum.

_CMP = ("<", "<=", ">", ">=", "==", "!=")
# Binary operators by level, loosest first (Go's expr.levels).
_LEVEL = {"||": 0, "&&": 1, "<": 2, "<=": 2, ">": 2, ">=": 2, "==": 2, "!=": 2,
          "+": 3, "-": 3, "*": 4, "/": 4, "%": 4}
_ARITY = {"cdiv": 2, "min": -1, "max": -1, "pow2ceil": 1, "log2": 1}  # -1: one or more
_TWO_CHAR = ("<=", ">=", "==", "!=", "&&", "||")


def _is_digit(b):
    # Go: unicode.IsDigit(rune(byte)); no byte above 0x7f is a decimal digit.
    return 0x30 <= b <= 0x39


def _is_letter(b):
    # Go: unicode.IsLetter(rune(byte)), i.e. a Latin-1 letter.
    return (0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A or b in (0xAA, 0xB5, 0xBA)
            or 0xC0 <= b <= 0xD6 or 0xD8 <= b <= 0xF6 or 0xF8 <= b <= 0xFF)


def _show(tok):
    return tok.decode("utf-8", "replace")


class _Parser:
    def __init__(self, src):
        self.src = src  # bytes
        self.pos = 0
        self.tok = b""
        self.code = []  # postfix instructions: (op, arg)
        self.names = set()

    def error(self, msg):
        return ExprError("at offset %d: %s" % (self.pos, msg))

    def next(self):
        s, n = self.src, len(self.src)
        while self.pos < n and s[self.pos] == 0x20:
            self.pos += 1
        if self.pos >= n:
            self.tok = b""
            return
        start, c = self.pos, s[self.pos]
        if _is_digit(c):
            while self.pos < n and _is_digit(s[self.pos]):
                self.pos += 1
        elif _is_letter(c) or c == 0x5F:
            while self.pos < n and (_is_letter(s[self.pos]) or _is_digit(s[self.pos]) or s[self.pos] == 0x5F):
                self.pos += 1
        else:
            two = s[self.pos:self.pos + 2]
            if two in (t.encode() for t in _TWO_CHAR):
                self.pos += 2
                self.tok = two
                return
            self.pos += 1
        self.tok = s[start:self.pos]

    def expect(self, tok):
        if self.tok != tok:
            if self.tok == b"":
                raise self.error("missing %r" % _show(tok))
            raise self.error("want %r, got %r" % (_show(tok), _show(self.tok)))
        self.next()

    def emit(self, op, arg=None):
        self.code.append((op, arg))
        return len(self.code) - 1

    def expr(self):
        self.binary(0)
        if self.tok != b"?":
            return
        self.next()
        jz = self.emit("jz")  # false: jump to the else branch
        self.expr()
        self.expect(b":")
        jmp = self.emit("jmp")
        self.code[jz] = ("jz", len(self.code))
        self.expr()
        self.code[jmp] = ("jmp", len(self.code))

    def binary(self, min_level):
        # Precedence climbing; builds the same left-associative trees as
        # Go's one-function-per-level parser, with fewer frames per paren.
        self.unary()
        while True:
            op = self.tok.decode("latin-1")
            level = _LEVEL.get(op)
            if level is None or level < min_level:
                return
            self.next()
            if op in ("&&", "||"):
                # Lazy: decide on the left value, else the right one's truth.
                j = self.emit("jand" if op == "&&" else "jor")
                self.binary(level + 1)
                self.emit("bool")
                self.code[j] = (self.code[j][0], len(self.code))
                continue
            self.binary(level + 1)
            self.emit("bin", op)
            if level == 2 and self.tok.decode("latin-1") in _CMP:
                raise self.error("comparisons do not chain: parenthesize")

    def unary(self):
        if self.tok in (b"-", b"!"):
            op = "neg" if self.tok == b"-" else "not"
            self.next()
            self.unary()
            self.emit(op)
            return
        self.atom()

    def atom(self):
        tok = self.tok
        if tok == b"":
            raise self.error("unexpected end")
        if tok == b"(":
            self.next()
            self.expr()
            self.expect(b")")
            return
        if _is_digit(tok[0]):
            v = int(tok.decode("ascii"))
            if v > INT64_MAX:
                raise self.error("integer %s out of range" % tok.decode("ascii"))
            self.next()
            self.emit("int", v)
            return
        if _is_letter(tok[0]) or tok[0] == 0x5F:
            self.next()
            if self.tok != b"(":
                name = tok.decode("utf-8", "surrogateescape")
                self.names.add(name)
                self.emit("name", name)
                return
            fn = tok.decode("latin-1")
            if fn not in _ARITY:
                raise self.error("unknown function %s" % _show(tok))
            self.next()
            argc = 0
            while True:
                self.expr()
                argc += 1
                if self.tok != b",":
                    break
                self.next()
            self.expect(b")")
            want = _ARITY[fn]
            if want >= 0 and argc != want:
                raise self.error("%s takes %d arguments, got %d" % (fn, want, argc))
            self.emit("call", (fn, argc))
            return
        raise self.error("unexpected %r" % _show(tok))


class Expr:
    """A parsed expression of fp8gen's integer language (docs/manifest.md).

    Values are int64; `/` and `%` truncate toward zero; `&&`, `||` and `?:`
    are lazy; division by zero, overflow, an unknown name and a function
    outside its domain raise ExprError, as Go's expr.Eval fails.
    """

    __slots__ = ("src", "_code", "names", "plain_name")

    def __init__(self, src):
        if not isinstance(src, str):
            raise ExprError("expression %r: not a string" % (src,))
        self.src = src
        p = _Parser(src.encode("utf-8", "surrogateescape"))
        try:
            p.next()
            p.expr()
            if p.tok != b"":
                raise p.error("unexpected %r" % _show(p.tok))
        except ExprError as e:
            raise ExprError("expression %r: %s" % (src, e)) from None
        except RecursionError:
            raise ExprError("expression %r: nests too deeply for this reader" % src) from None
        self._code = tuple(p.code)
        self.names = frozenset(p.names)
        # A dimension that is just a size: what a loader infers sizes from.
        self.plain_name = self._code[0][1] if len(self._code) == 1 and self._code[0][0] == "name" else None

    def __repr__(self):
        return "Expr(%r)" % self.src

    def __str__(self):
        return self.src

    def eval(self, env):
        """The value in env (a mapping of names to ints)."""
        try:
            return _run(self._code, env)
        except ExprError as e:
            raise ExprError("%s: %s" % (self.src, e)) from None


def _ovf(v):
    if v < INT64_MIN or v > INT64_MAX:
        raise ExprError("integer overflow")
    return v


def _binop(op, a, b):
    if op == "+":
        return _ovf(a + b)
    if op == "-":
        return _ovf(a - b)
    if op == "*":
        # Go refuses |a·b| > 2^63 - 1, so MinInt64 itself is no product.
        p = a * b
        if abs(p) > INT64_MAX:
            raise ExprError("integer overflow")
        return p
    if op in ("/", "%"):
        if b == 0:
            raise ExprError("division by zero")
        if a == INT64_MIN and b == -1:
            raise ExprError("integer overflow")
        q = abs(a) // abs(b)  # truncate toward zero, as C and Go do
        if (a < 0) != (b < 0):
            q = -q
        return q if op == "/" else a - b * q
    if op == "<":
        return int(a < b)
    if op == "<=":
        return int(a <= b)
    if op == ">":
        return int(a > b)
    if op == ">=":
        return int(a >= b)
    if op == "==":
        return int(a == b)
    if op == "!=":
        return int(a != b)
    raise AssertionError("operator " + op)


def _call(fn, a):
    if fn == "cdiv":
        if a[1] <= 0 or a[0] < 0:
            raise ExprError("cdiv(%d, %d): want a >= 0 and b > 0" % (a[0], a[1]))
        return a[0] // a[1] + int(a[0] % a[1] != 0)
    if fn == "min":
        return min(a)
    if fn == "max":
        return max(a)
    if fn == "pow2ceil":
        if a[0] <= 1:
            return 1
        if a[0] > 1 << 62:
            raise ExprError("integer overflow")
        return 1 << (a[0] - 1).bit_length()
    if fn == "log2":
        if a[0] <= 0 or a[0] & (a[0] - 1):
            raise ExprError("log2(%d): not a power of two" % a[0])
        return a[0].bit_length() - 1
    raise AssertionError("function " + fn)


def _run(code, env):
    stack = []
    pc, n = 0, len(code)
    while pc < n:
        op, arg = code[pc]
        pc += 1
        if op == "int":
            stack.append(arg)
        elif op == "name":
            if arg not in env:
                raise ExprError("unknown name %s" % arg)
            v = env[arg]
            if isinstance(v, bool) or not isinstance(v, int) or not INT64_MIN <= v <= INT64_MAX:
                raise ExprError("%s=%r is not a 64-bit integer" % (arg, v))
            stack.append(v)
        elif op == "bin":
            b = stack.pop()
            stack.append(_binop(arg, stack.pop(), b))
        elif op == "neg":
            v = stack.pop()
            if v == INT64_MIN:
                raise ExprError("integer overflow")
            stack.append(-v)
        elif op == "not":
            stack.append(int(stack.pop() == 0))
        elif op == "bool":
            stack.append(int(stack.pop() != 0))
        elif op == "jand":  # a && …: a zero left side decides
            if stack[-1] == 0:
                stack[-1] = 0
                pc = arg
            else:
                stack.pop()
        elif op == "jor":  # a || …: a nonzero left side decides
            if stack[-1] != 0:
                stack[-1] = 1
                pc = arg
            else:
                stack.pop()
        elif op == "jz":
            if stack.pop() == 0:
                pc = arg
        elif op == "jmp":
            pc = arg
        elif op == "call":
            fn, argc = arg
            args = stack[len(stack) - argc:]
            del stack[len(stack) - argc:]
            stack.append(_call(fn, args))
        else:
            raise AssertionError("instruction " + op)
    return stack[-1]


def evaluate(src, env):
    """Parse and evaluate src in env; ExprError if either fails."""
    return Expr(src).eval(env)


# ---------------------------------------------------------------------------
# The manifest

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Reader:
    """Typed access to one JSON object, naming the path in errors."""

    def __init__(self, obj, where, required, optional=()):
        if not isinstance(obj, dict):
            raise ManifestError("%s: want an object, got %s" % (where, _jtype(obj)))
        unknown = sorted(set(obj) - set(required) - set(optional))
        if unknown:
            # Go decodes with DisallowUnknownFields: a field it does not know
            # may change the meaning, so it is refused, not ignored.
            raise ManifestError("%s: unknown field %s" % (where, ", ".join(unknown)))
        missing = [k for k in required if k not in obj]
        if missing:
            raise ManifestError("%s: missing field %s" % (where, ", ".join(missing)))
        self.obj, self.where = obj, where

    def _bad(self, key, want):
        return ManifestError("%s.%s: want %s, got %s" % (self.where, key, want, _jtype(self.obj[key])))

    def has(self, key):
        return key in self.obj

    def str(self, key, pattern=None):
        v = self.obj[key]
        if not isinstance(v, str):
            raise self._bad(key, "a string")
        if pattern is not None and not pattern.match(v):
            raise ManifestError("%s.%s: %r is not of the form %s" % (self.where, key, v, pattern.pattern))
        return v

    def int(self, key, lo=None, hi=None):
        v = self.obj[key]
        if isinstance(v, bool) or not isinstance(v, int):
            raise self._bad(key, "an integer")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ManifestError("%s.%s: %d out of range [%s, %s]" % (self.where, key, v, lo, hi))
        return v

    def bool(self, key):
        v = self.obj[key]
        if not isinstance(v, bool):
            raise self._bad(key, "true or false")
        return v

    def num(self, key):
        v = self.obj[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self._bad(key, "a number")
        return v

    def list(self, key, nullable=False):
        # Go writes an empty slice as null ("constraints": null).
        v = self.obj[key]
        if v is None and nullable:
            return []
        if not isinstance(v, list):
            raise self._bad(key, "an array")
        return v

    def map(self, key, value_check, nullable=True):
        v = self.obj[key]
        if v is None and nullable:
            return {}
        if not isinstance(v, dict):
            raise self._bad(key, "an object")
        for k, x in v.items():
            if not value_check(x):
                raise ManifestError("%s.%s.%s: unexpected value %r" % (self.where, key, k, x))
        return dict(v)

    def expr(self, key, v=None, where=None):
        v = self.obj[key] if v is None else v
        where = where or "%s.%s" % (self.where, key)
        if not isinstance(v, str):
            raise ManifestError("%s: want an expression (string), got %s" % (where, _jtype(v)))
        try:
            return Expr(v)
        except ExprError as e:
            raise ManifestError("%s: %s" % (where, e)) from None


def _jtype(v):
    if v is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(v), type(v).__name__)


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class Target:
    def __init__(self, r):
        self.name = r.str("name")
        self.vendor = r.str("vendor")
        if self.vendor not in ("amd", "nvidia"):
            raise ManifestError("%s.vendor: %r: want amd or nvidia" % (r.where, self.vendor))
        self.product = r.str("product")
        self.wave_size = r.int("wave_size", 1)


class Format:
    def __init__(self, r):
        self.name = r.str("name")
        if self.name not in FP8_FORMATS:
            raise ManifestError("%s.name: unknown FP8 format %r" % (r.where, self.name))
        self.max = r.num("max")


class File:
    def __init__(self, r):
        self.file = r.str("file")
        # Only a name beside manifest.json: never a path out of the folder.
        if self.file in ("", ".", "..") or "/" in self.file or "\\" in self.file or "\x00" in self.file:
            raise ManifestError("%s.file: %r is not a name in the export folder" % (r.where, self.file))
        self.sha256 = r.str("sha256", _SHA256)


class CodeObject(File):
    def __init__(self, r):
        super().__init__(r)
        self.arch = r.str("arch")
        if not self.arch:
            raise ManifestError("%s.arch: empty" % r.where)
        self.compiler = r.str("compiler")


class Size:
    def __init__(self, r):
        self.name = r.str("name", _IDENT)
        self.multiple_of = r.int("multiple_of", 1)


class Constraint:
    def __init__(self, r):
        self.expr = r.expr("expr")
        self.why = r.str("why")


class Tensor:
    def __init__(self, r):
        self.name = r.str("name", _IDENT)
        self.role = r.str("role")
        if self.role not in ROLES:
            raise ManifestError("%s.role: %r: want input, output or scratch" % (r.where, self.role))
        self.dtype = r.str("dtype")
        if self.dtype not in DTYPES:
            raise ManifestError("%s.dtype: unknown dtype %r (known: %s)" % (r.where, self.dtype, ", ".join(DTYPES)))
        shape = r.list("shape")
        if not shape:
            raise ManifestError("%s.shape: empty" % r.where)
        self.shape = [r.expr("shape", d, "%s.shape[%d]" % (r.where, i)) for i, d in enumerate(shape)]
        self.init = r.num("init") if r.has("init") else None
        self.status = r.str("status") if r.has("status") else None
        self.doc = r.str("doc")
        if (self.role == "scratch") != (self.init is not None):
            raise ManifestError("%s: init is for scratch tensors, and every scratch has one" % r.where)
        if self.status is not None and (self.role != "scratch" or not self.status):
            raise ManifestError("%s: status is a non-empty string on a scratch tensor" % r.where)
        if self.init is not None and self.dtype in INT_DTYPES:
            if self.init != int(self.init) or not INT64_MIN <= int(self.init) <= INT64_MAX:
                raise ManifestError("%s: init %r is no %s value" % (r.where, self.init, self.dtype))

    @property
    def itemsize(self):
        return DTYPE_BYTES[self.dtype]


class Param:
    def __init__(self, r):
        self.name = r.str("name", _IDENT)
        self.kind = r.str("kind")
        self.dtype = r.str("dtype") if r.has("dtype") else None


class Kernel:
    def __init__(self, r):
        self.name = r.str("name")
        self.symbol = r.str("symbol", _SYMBOL)
        self.params = [Param(_Reader(p, "%s.params[%d]" % (r.where, i), ("name", "kind"), ("dtype",)))
                       for i, p in enumerate(r.list("params", nullable=True))]
        grid = r.list("grid")
        if len(grid) != 3:
            raise ManifestError("%s.grid: want 3 expressions, got %d" % (r.where, len(grid)))
        self.grid = [r.expr("grid", g, "%s.grid[%d]" % (r.where, i)) for i, g in enumerate(grid)]
        block = r.list("block")
        if len(block) != 3 or not all(_is_int(b) and b >= 1 for b in block):
            raise ManifestError("%s.block: want 3 positive integers, got %r" % (r.where, block))
        self.block = tuple(block)
        self.dynamic_lds_bytes = r.int("dynamic_lds_bytes", 0, INT32_MAX)
        self.static_lds_bytes = r.int("static_lds_bytes", 0, INT32_MAX)
        # The kernel waits for its predecessor itself, so it could overlap
        # that one's tail (programmatic dependent launch); this loader
        # launches plainly, which is always correct.
        self.dependent_launch = r.bool("dependent_launch") if r.has("dependent_launch") else False


_TOP = ("fp8gen_manifest", "op", "doc", "target", "fp8", "options", "schedule", "index_bits",
        "max_elements", "shape", "sizes", "constraints", "tensors", "source", "compile_flags", "code_object",
        "kernels")


class Plan:
    """A manifest at one shape that check() accepted: every tensor's dims
    and element count, every kernel's grid."""

    def __init__(self, sizes, dims, elems, grids):
        self.sizes = sizes  # name -> int
        self.dims = dims    # tensor name -> tuple of ints
        self.elems = elems  # tensor name -> int
        self.grids = grids  # one (x, y, z) per kernel, in launch order


class Manifest:
    """A parsed, validated manifest.json. Build one with parse() or load()."""

    def __init__(self, data, where=MANIFEST_FILE):
        if not isinstance(data, dict):
            raise ManifestError("%s: want a JSON object, got %s" % (where, _jtype(data)))
        # The version first, alone: a newer manifest may have any fields.
        if "fp8gen_manifest" not in data:
            raise ManifestError("%s: no fp8gen_manifest version: not an fp8gen manifest" % where)
        v = data["fp8gen_manifest"]
        if v != VERSION or not _is_int(v):
            raise ManifestError("%s: format version %r; this reader (fp8gen_torch) reads version %d"
                                % (where, v, VERSION))
        r = _Reader(data, where, _TOP)
        self.version = v
        self.op = r.str("op", _IDENT)
        self.doc = r.str("doc")
        self.target = Target(_Reader(data["target"], where + ".target", ("name", "vendor", "product", "wave_size")))
        self.fp8 = None if data["fp8"] is None else Format(_Reader(data["fp8"], where + ".fp8", ("name", "max")))
        self.options = r.map("options", lambda x: isinstance(x, str))
        self.schedule = r.map("schedule", _is_int)
        self.index_bits = r.int("index_bits")
        if self.index_bits not in (32, 64):
            raise ManifestError("%s: index_bits %d: want 32 or 64" % (where, self.index_bits))
        self.max_elements = r.int("max_elements", 1, INT64_MAX)
        self.shape = r.map("shape", lambda x: _is_int(x) and x >= 1)
        self.sizes = [Size(_Reader(s, "%s.sizes[%d]" % (where, i), ("name", "multiple_of")))
                      for i, s in enumerate(r.list("sizes", nullable=True))]
        self.constraints = [Constraint(_Reader(c, "%s.constraints[%d]" % (where, i), ("expr", "why")))
                            for i, c in enumerate(r.list("constraints", nullable=True))]
        self.tensors = [Tensor(_Reader(t, "%s.tensors[%d]" % (where, i), ("name", "role", "dtype", "shape", "doc"),
                                       ("init", "status")))
                        for i, t in enumerate(r.list("tensors", nullable=True))]
        self.source = File(_Reader(data["source"], where + ".source", ("file", "sha256")))
        flags = r.list("compile_flags")
        if not all(isinstance(f, str) and f for f in flags):
            raise ManifestError("%s.compile_flags: want a list of flags, got %r" % (where, flags))
        self.compile_flags = tuple(flags)  # what the source needs compiled with
        co = data["code_object"]
        self.code_object = None if co is None else CodeObject(
            _Reader(co, where + ".code_object", ("file", "sha256", "arch", "compiler")))
        self.kernels = [Kernel(_Reader(k, "%s.kernels[%d]" % (where, i),
                                       ("name", "symbol", "params", "grid", "block",
                                        "dynamic_lds_bytes", "static_lds_bytes"), ("dependent_launch",)))
                        for i, k in enumerate(r.list("kernels", nullable=True))]
        self._validate(where)
        self.size_names = [s.name for s in self.sizes]
        self.inputs = [t for t in self.tensors if t.role == "input"]
        self.outputs = [t for t in self.tensors if t.role == "output"]
        self.scratch = [t for t in self.tensors if t.role == "scratch"]
        self.tensor = {t.name: t for t in self.tensors}
        self.dir = None
        self.source_bytes = None
        self.code_object_bytes = None

    def _validate(self, where):
        # Go's Manifest.Validate, plus what a loader needs to hold true.
        def bad(msg):
            return ManifestError("%s: manifest of %s: %s" % (where, self.op, msg))

        sizes = set()
        for s in self.sizes:
            if s.name in sizes:
                raise bad("size %s given twice" % s.name)
            sizes.add(s.name)

        def reads(what, e):
            for n in sorted(e.names):
                if n not in sizes:
                    raise bad("%s %r reads %s, which is not a size" % (what, e.src, n))

        for c in self.constraints:
            reads("constraint", c.expr)
        tensors = set()
        for t in self.tensors:
            if t.name in tensors:
                raise bad("tensor %s given twice" % t.name)
            tensors.add(t.name)
            for d in t.shape:
                reads("shape of " + t.name, d)
        if not self.kernels:
            raise bad("no kernels")
        for i, k in enumerate(self.kernels):
            if k.dependent_launch and (i == 0 or self.target.vendor != "nvidia"):
                raise bad("kernel %s: dependent_launch on the first kernel or off NVIDIA" % k.symbol)
            for g in k.grid:
                reads("grid of " + k.symbol, g)
            for p in k.params:
                ok = (p.kind == "tensor" and p.name in tensors and p.dtype is None) or \
                     (p.kind == "size" and p.name in sizes and p.dtype in INT_DTYPES)
                if not ok:
                    raise bad("kernel %s: parameter %s (%s %s) is neither a tensor nor a size"
                              % (k.symbol, p.name, p.kind, p.dtype or ""))

    # -- shapes ------------------------------------------------------------

    def check(self, shape):
        """Hold shape (a dict of size name -> int) to the manifest's class, as
        Go's Manifest.Check does, before any launch; ShapeError names the
        size or the bound. Returns the Plan at that shape."""
        op = self.op
        for s in self.sizes:
            if s.name not in shape:
                raise ShapeError("%s: size %s missing" % (op, s.name))
            v = shape[s.name]
            if isinstance(v, bool) or not isinstance(v, int):
                raise ShapeError("%s: size %s=%r is not an integer" % (op, s.name, v))
            if v <= 0:
                raise ShapeError("%s: size %s=%d must be positive" % (op, s.name, v))
            if v > INT64_MAX:
                raise ShapeError("%s: size %s=%d is past int64" % (op, s.name, v))
            if v % s.multiple_of:
                raise ShapeError("%s: size %s=%d: this build is compiled for multiples of %d"
                                 % (op, s.name, v, s.multiple_of))
        for n in sorted(shape):
            if n not in self.size_names:
                raise ShapeError("%s: unknown size %s (sizes: %s)" % (op, n, ", ".join(self.size_names)))
        env = dict(shape)
        for c in self.constraints:
            try:
                v = c.expr.eval(env)
            except ExprError as e:
                raise ShapeError("%s: constraint %s: %s" % (op, c.expr, e)) from None
            if v == 0:
                raise ShapeError("%s: at %s, %s fails: %s" % (op, _shape_str(shape), c.expr, c.why))
        dims, elems = {}, {}
        for t in self.tensors:
            dims[t.name] = self.dims_at(t, env)
            n = 1
            for d in dims[t.name]:
                if d <= 0 or n > INT64_MAX // d:
                    raise ShapeError("%s: tensor %s of shape %s: too large, or a dimension is not positive"
                                     % (op, t.name, list(dims[t.name])))
                n *= d
            if n > self.max_elements:
                raise ShapeError("%s: tensor %s has %d elements, more than this build's %d-bit indexing reaches (%d)"
                                 % (op, t.name, n, self.index_bits, self.max_elements))
            elems[t.name] = n
        grids = []
        for k in self.kernels:
            g = self.grid_at(k, env)
            for i, v in enumerate(g):
                if v > GRID_MAX:
                    raise ShapeError("%s: kernel %s: %d blocks along axis %d, more than a launch takes"
                                     % (op, k.symbol, v, i))
            grids.append(g)
        return Plan(dict(shape), dims, elems, grids)

    def dims_at(self, tensor, shape):
        """A tensor's (or tensor name's) dims at shape, as a tuple."""
        t = self.tensor[tensor] if isinstance(tensor, str) else tensor
        out = []
        for d in t.shape:
            try:
                out.append(d.eval(shape))
            except ExprError as e:
                raise ShapeError("%s: tensor %s: %s" % (self.op, t.name, e)) from None
        return tuple(out)

    def grid_at(self, kernel, shape):
        """A kernel's grid at shape, as (x, y, z)."""
        out = []
        for i, e in enumerate(kernel.grid):
            try:
                v = e.eval(shape)
            except ExprError as err:
                raise ShapeError("%s: kernel %s: grid: %s" % (self.op, kernel.symbol, err)) from None
            if v < 0:
                raise ShapeError("%s: kernel %s: grid %s = %d along axis %d" % (self.op, kernel.symbol, e, v, i))
            out.append(v)
        return tuple(out)


def _shape_str(shape):
    return ",".join("%s=%s" % (k, shape[k]) for k in sorted(shape))


def parse(text, where=MANIFEST_FILE):
    """A Manifest from manifest.json's text (str or bytes), not reading the
    files it names."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ManifestError("%s: not JSON: %s" % (where, e)) from None
    return Manifest(data, where)


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def load_manifest(folder, verify=True):
    """The Manifest of an export folder, with the bytes of its source
    (source_bytes) and code object (code_object_bytes, or None), each
    checked against the SHA-256 the manifest records."""
    path = os.path.join(folder, MANIFEST_FILE)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise ManifestError("%s: %s" % (path, e.strerror or e)) from None
    m = parse(text, path)
    m.dir = folder

    def read(f):
        p = os.path.join(folder, f.file)
        try:
            with open(p, "rb") as fh:
                data = fh.read()
        except OSError as e:
            raise ManifestError("%s: %s (named by %s)" % (p, e.strerror or e, path)) from None
        if verify and sha256_hex(data) != f.sha256:
            raise ManifestError("%s: SHA-256 %s; the manifest says %s" % (p, sha256_hex(data), f.sha256))
        return data

    m.source_bytes = read(m.source)
    if m.code_object is not None:
        m.code_object_bytes = read(m.code_object)
    return m
