"""The GPU side of the loader: the device's target name, code objects (the
export's, or JIT-compiled from its source), and the vendor's driver API
with ctypes — libcuda.so.1 on NVIDIA, libamdhip64.so on ROCm: module
loading, and the launch and memset functions a launch plan (plan.py) calls
on torch's current stream.

Only ops.py imports this module, and only once a loaded op runs; nothing
here is needed to read or check a manifest.
"""

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading

import torch

from .manifest import ShapeError
from .plan import pack_args  # noqa: F401  (kernelParams the plain way; plan.LaunchPlan packs once)

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # CUfunction_attribute
DEFAULT_DYNAMIC_SHARED_LIMIT = 48 * 1024  # above this, CUDA wants an opt-in

# The flags that choose the arch and the output kind; the manifest's
# compile_flags (no contraction, no denormal flush: the references' bits)
# follow them, before "-o OUT SRC".
NVCC_FLAGS = ("--cubin", "-arch={arch}")
HIPCC_FLAGS = ("--genco", "--offload-arch={arch}")


class DriverError(RuntimeError):
    """A driver call failed, or no driver library could be loaded."""


class CompileError(RuntimeError):
    """No compiler for the source, or the compiler failed."""


class DeviceError(RuntimeError):
    """An export that cannot run on this device (another target)."""


# ---------------------------------------------------------------------------
# The device


def vendor():
    """'amd' on a ROCm build of torch, else 'nvidia'."""
    return "amd" if getattr(torch.version, "hip", None) else "nvidia"


def device_target(index):
    """The fp8gen target name of CUDA/ROCm device index: sm_90, gfx942, …"""
    if vendor() == "amd":
        name = torch.cuda.get_device_properties(index).gcnArchName
        return name.split(":")[0]  # "gfx942:sramecc+:xnack-" -> "gfx942"
    major, minor = torch.cuda.get_device_capability(index)
    return "sm_%d%d" % (major, minor)


# ---------------------------------------------------------------------------
# Driver bindings

_c = ctypes
_vp = _c.c_void_p
_ui = _c.c_uint


def _dlopen(names):
    errors = []
    for n in names:
        try:
            return _c.CDLL(n, mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2)), n
        except OSError as e:
            errors.append("%s: %s" % (n, e))
    raise DriverError("cannot load the GPU driver library: " + "; ".join(errors))


class _Cuda:
    """libcuda: the driver API, in the context torch's runtime uses (each
    device's primary context)."""

    vendor = "nvidia"
    # CUDA_ERROR_INVALID_CONTEXT: the thread had no context (or another)
    # current; nothing was issued, so the call is issued again inside the
    # device's primary context.
    retry_codes = (201,)

    def __init__(self):
        self.lib, self.path = _dlopen(["libcuda.so.1", "libcuda.so"])
        L = self.lib
        sig = {
            "cuInit": [_ui],
            "cuDeviceGet": [_c.POINTER(_c.c_int), _c.c_int],
            "cuDevicePrimaryCtxRetain": [_c.POINTER(_vp), _c.c_int],
            "cuCtxGetCurrent": [_c.POINTER(_vp)],
            "cuCtxSetCurrent": [_vp],
            "cuModuleLoadData": [_c.POINTER(_vp), _vp],
            "cuModuleGetFunction": [_c.POINTER(_vp), _vp, _c.c_char_p],
            "cuFuncSetAttribute": [_vp, _c.c_int, _c.c_int],
            "cuLaunchKernel": [_vp, _ui, _ui, _ui, _ui, _ui, _ui, _ui, _vp, _c.POINTER(_vp), _c.POINTER(_vp)],
            "cuMemsetD8Async": [_c.c_uint64, _c.c_ubyte, _c.c_size_t, _vp],
            "cuMemsetD16Async": [_c.c_uint64, _c.c_ushort, _c.c_size_t, _vp],
            "cuMemsetD32Async": [_c.c_uint64, _ui, _c.c_size_t, _vp],
            "cuGetErrorName": [_c.c_int, _c.POINTER(_c.c_char_p)],
            "cuGetErrorString": [_c.c_int, _c.POINTER(_c.c_char_p)],
        }
        for name, args in sig.items():
            f = getattr(L, name)
            f.argtypes, f.restype = args, _c.c_int
        self.check(L.cuInit(0), "cuInit")
        self._ctx = {}  # device index -> its retained primary context
        # What a launch plan calls: the driver's own functions, with their
        # argument types set once (plan.LaunchPlan.run).
        self.launch_fn = L.cuLaunchKernel
        self.memset_fns = {1: L.cuMemsetD8Async, 2: L.cuMemsetD16Async, 4: L.cuMemsetD32Async}

    def check(self, rc, what):
        if rc == 0:
            return
        name, text = _c.c_char_p(), _c.c_char_p()
        self.lib.cuGetErrorName(rc, _c.byref(name))
        self.lib.cuGetErrorString(rc, _c.byref(text))
        raise DriverError("%s: CUDA error %d %s: %s" % (
            what, rc, (name.value or b"?").decode(), (text.value or b"?").decode()))

    def _primary(self, index):
        ctx = self._ctx.get(index)
        if ctx is None:
            dev = _c.c_int()
            self.check(self.lib.cuDeviceGet(_c.byref(dev), index), "cuDeviceGet(%d)" % index)
            ctx = _vp()
            # Retained for the life of the process: torch's runtime lives in
            # this same context, and our modules must outlive every launch.
            self.check(self.lib.cuDevicePrimaryCtxRetain(_c.byref(ctx), dev), "cuDevicePrimaryCtxRetain(%d)" % index)
            self._ctx[index] = ctx
        return ctx

    def enter(self, index):
        """Make device index's primary context current; return what to
        restore (None: nothing)."""
        want = self._primary(index)
        cur = _vp()
        self.check(self.lib.cuCtxGetCurrent(_c.byref(cur)), "cuCtxGetCurrent")
        if cur.value == want.value:
            return None
        self.check(self.lib.cuCtxSetCurrent(want), "cuCtxSetCurrent")
        # No context was current: leave ours (torch's own) in place.
        return cur if cur.value else None

    def leave(self, prev):
        if prev is not None:
            self.check(self.lib.cuCtxSetCurrent(prev), "cuCtxSetCurrent")

    def load(self, image):
        buf = _c.create_string_buffer(image, len(image))
        mod = _vp()
        self.check(self.lib.cuModuleLoadData(_c.byref(mod), _c.cast(buf, _vp)), "cuModuleLoadData")
        return mod

    def function(self, mod, symbol):
        fn = _vp()
        self.check(self.lib.cuModuleGetFunction(_c.byref(fn), mod, symbol.encode()), "cuModuleGetFunction(%s)" % symbol)
        return fn

    def allow_dynamic_shared(self, fn, nbytes, symbol):
        if nbytes > DEFAULT_DYNAMIC_SHARED_LIMIT:
            self.check(self.lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
                       "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %d)" % (symbol, nbytes))

    def check_grid(self, grid, block, symbol):
        pass


class _Hip:
    """libamdhip64: HIP's module API, on the device torch has current."""

    vendor = "amd"
    retry_codes = ()  # HIP launches on the current device; the caller makes it the tensors'

    def __init__(self):
        names = ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"]
        # torch's ROCm wheels carry their own copy, already loaded: prefer it.
        lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
        bundled = os.path.join(lib_dir, "libamdhip64.so")
        if os.path.exists(bundled):
            names.insert(0, bundled)
        self.lib, self.path = _dlopen(names)
        L = self.lib
        sig = {
            "hipInit": [_ui],
            "hipGetDevice": [_c.POINTER(_c.c_int)],
            "hipSetDevice": [_c.c_int],
            "hipModuleLoadData": [_c.POINTER(_vp), _vp],
            "hipModuleGetFunction": [_c.POINTER(_vp), _vp, _c.c_char_p],
            "hipModuleLaunchKernel": [_vp, _ui, _ui, _ui, _ui, _ui, _ui, _ui, _vp, _c.POINTER(_vp), _c.POINTER(_vp)],
            "hipMemsetD8Async": [_vp, _c.c_ubyte, _c.c_size_t, _vp],
            "hipMemsetD16Async": [_vp, _c.c_ushort, _c.c_size_t, _vp],
            "hipMemsetD32Async": [_vp, _ui, _c.c_size_t, _vp],  # int in hip's header: the same 32 bits
        }
        for name, args in sig.items():
            f = getattr(L, name)
            f.argtypes, f.restype = args, _c.c_int
        L.hipGetErrorString.argtypes, L.hipGetErrorString.restype = [_c.c_int], _c.c_char_p
        L.hipGetErrorName.argtypes, L.hipGetErrorName.restype = [_c.c_int], _c.c_char_p
        self.check(L.hipInit(0), "hipInit")
        self.launch_fn = L.hipModuleLaunchKernel
        self.memset_fns = {1: L.hipMemsetD8Async, 2: L.hipMemsetD16Async, 4: L.hipMemsetD32Async}

    def check(self, rc, what):
        if rc == 0:
            return
        raise DriverError("%s: HIP error %d %s: %s" % (
            what, rc, (self.lib.hipGetErrorName(rc) or b"?").decode(), (self.lib.hipGetErrorString(rc) or b"?").decode()))

    def enter(self, index):
        cur = _c.c_int()
        self.check(self.lib.hipGetDevice(_c.byref(cur)), "hipGetDevice")
        if cur.value == index:
            return None
        self.check(self.lib.hipSetDevice(index), "hipSetDevice(%d)" % index)
        return cur.value

    def leave(self, prev):
        if prev is not None:
            self.check(self.lib.hipSetDevice(prev), "hipSetDevice(%d)" % prev)

    def load(self, image):
        buf = _c.create_string_buffer(image, len(image))
        mod = _vp()
        self.check(self.lib.hipModuleLoadData(_c.byref(mod), _c.cast(buf, _vp)), "hipModuleLoadData")
        return mod

    def function(self, mod, symbol):
        fn = _vp()
        self.check(self.lib.hipModuleGetFunction(_c.byref(fn), mod, symbol.encode()), "hipModuleGetFunction(%s)" % symbol)
        return fn

    def allow_dynamic_shared(self, fn, nbytes, symbol):
        pass  # AMD has no opt-in for module kernels, and needs none

    def check_grid(self, grid, block, symbol):
        # HIP refuses a launch whose work items along an axis reach 2^32.
        for g, b in zip(grid, block):
            if g * b >= 1 << 32:
                raise ShapeError("kernel %s: grid %s of blocks %s: %d work items along an axis; HIP takes fewer than 2^32"
                                 % (symbol, grid, block, g * b))


_driver = None
_driver_lock = threading.Lock()


def driver():
    """The process's driver binding, opened on first use."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = _Hip() if vendor() == "amd" else _Cuda()
        return _driver


# ---------------------------------------------------------------------------
# Compiling a source

def _find_tool(vend):
    """nvcc or hipcc, looked for as fp8gen's Go runtime does: $NVCC,
    $CUDA_PATH/bin/nvcc, PATH, /usr/local/cuda/bin/nvcc (hipcc: $HIPCC,
    $ROCM_PATH/bin/hipcc, PATH, /opt/rocm/bin/hipcc)."""
    tool, env, root_env, default = (("nvcc", "NVCC", "CUDA_PATH", "/usr/local/cuda/bin/nvcc") if vend == "nvidia"
                                    else ("hipcc", "HIPCC", "ROCM_PATH", "/opt/rocm/bin/hipcc"))
    tried = []
    v = os.environ.get(env)
    if v:
        p = shutil.which(v)
        if not p:
            raise CompileError("$%s=%s is not an executable" % (env, v))
        return os.path.abspath(p)
    tried.append("$%s (unset)" % env)
    root = os.environ.get(root_env)
    if root:
        p = os.path.join(root, "bin", tool)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
        tried.append("$%s/bin/%s = %s (not found)" % (root_env, tool, p))
    else:
        tried.append("$%s/bin/%s ($%s unset)" % (root_env, tool, root_env))
    p = shutil.which(tool)
    if p:
        return os.path.abspath(p)
    tried.append(tool + " in $PATH (not found)")
    if os.path.isfile(default) and os.access(default, os.X_OK):
        return default
    tried.append(default + " (not found)")
    raise CompileError("no %s to compile the source with: tried %s" % (tool, ", ".join(tried)))


_versions = {}


def _tool_version(tool):
    st = os.stat(tool)
    key = (tool, st.st_size, st.st_mtime_ns)
    if key not in _versions:
        r = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=120)
        _versions[key] = (r.stdout + r.stderr).strip()
    return _versions[key]


def cache_dir():
    """Where compiled code objects are kept: $FP8GEN_TORCH_CACHE, else
    $XDG_CACHE_HOME/fp8gen/torch, else ~/.cache/fp8gen/torch."""
    d = os.environ.get("FP8GEN_TORCH_CACHE")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fp8gen", "torch")


_compile_lock = threading.Lock()


def compile_source(source, filename, vend, arch, compile_flags):
    """A code object of source (bytes; filename is its name, whose suffix
    tells nvcc the language) for arch, compiled with the manifest's
    compile_flags, from the cache or compiled now."""
    tool = _find_tool(vend)
    flags = [f.format(arch=arch) for f in (NVCC_FLAGS if vend == "nvidia" else HIPCC_FLAGS)] + list(compile_flags)
    ext = ".cubin" if vend == "nvidia" else ".hsaco"
    h = hashlib.sha256()
    # Everything that decides the image; length-prefixed so no two inputs collide.
    for part in [source, arch.encode(), tool.encode(), _tool_version(tool).encode()] + [f.encode() for f in flags]:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    d = cache_dir()
    out = os.path.join(d, h.hexdigest() + ext)
    with _compile_lock:
        try:
            with open(out, "rb") as f:
                return f.read()
        except OSError:
            pass
        os.makedirs(d, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=d, prefix=".build-") as tmp:
            src = os.path.join(tmp, filename)
            with open(src, "wb") as f:
                f.write(source)
            obj = os.path.join(tmp, "out" + ext)
            timeout = float(os.environ.get("FP8GEN_TORCH_JIT_TIMEOUT", "300"))
            cmd = [tool] + flags + ["-o", obj, src]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise CompileError("%s ran past %gs" % (" ".join(cmd), timeout)) from None
            if r.returncode != 0 or not os.path.exists(obj):
                raise CompileError("%s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, (r.stderr + r.stdout).strip()))
            with open(obj, "rb") as f:
                image = f.read()
            os.replace(obj, out)  # atomic: a reader never sees half a file
        return image
