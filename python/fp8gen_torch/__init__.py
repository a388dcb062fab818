"""fp8gen_torch: run fp8gen exports (fp8gen export OP --target T -o DIR)
from PyTorch.

    from fp8gen_torch import load
    op = load("k")        # reads k/manifest.json, checks its files' SHA-256s
    q, inv_scale = op(x)  # checks x, launches the kernels on the current stream

    rope = load("qk", backward="qk_bwd")   # qk_norm_rope with qk_norm_rope_bwd
    q, k, v = rope(qkv, q_weight, k_weight, cos, sin)   # autograd records it

The manifest reader (fp8gen_torch.manifest) needs no torch; torch is
imported when load() is first called.
"""

__version__ = "0.1.0"

from .manifest import (VERSION, ExprError, Expr, Manifest, ManifestError, ShapeError, evaluate,
                       load_manifest, parse)

__all__ = ["VERSION", "Expr", "ExprError", "Manifest", "ManifestError", "ShapeError", "evaluate",
           "load", "load_manifest", "parse"]


def load(folder, check_status=True, sizes=None, backward=None):
    """The export in folder as a callable PyTorch op (see ops.Op); with
    backward (the folder of OP_bwd's export), a differentiable one."""
    from .ops import load as _load  # torch only now
    return _load(folder, check_status=check_status, sizes=sizes, backward=backward)
