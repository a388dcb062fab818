"""A forward export and its backward export as one differentiable op: how
the backward's tensors map to the forward's, read from the two manifests
(no torch).

fp8gen names a backward OP_bwd; its inputs are tensors of the forward
(saved: qk_norm_rope_bwd reads qkv, q_weight, k_weight and the RoPE tables
the forward read) and the gradients of the forward's outputs, named d<out>
or d_<out> (dq for q); its outputs are the gradients of forward inputs,
named the same way (d_qkv for qkv). A forward input with no gradient output
(the RoPE tables) gets none.
"""

from .manifest import ManifestError


class Pairing:
    """The map from a backward manifest's tensors to its forward's.

    bwd_inputs: per backward input, ("input", i) — forward input i, saved;
    ("output", j) — forward output j, saved; ("grad", j) — the gradient of
    forward output j. input_grads: per forward input, the index of the
    backward output that is its gradient, or None. saved_inputs,
    saved_outputs: the forward indices the backward reads, what a forward
    call must save."""

    def __init__(self, fwd, bwd, bwd_inputs, input_grads):
        self.fwd, self.bwd = fwd, bwd
        self.bwd_inputs = tuple(bwd_inputs)
        self.input_grads = tuple(input_grads)
        self.saved_inputs = tuple(i for kind, i in bwd_inputs if kind == "input")
        self.saved_outputs = tuple(j for kind, j in bwd_inputs if kind == "output")
        self.differentiable = tuple(i for i, g in enumerate(input_grads) if g is not None)

    def __repr__(self):
        return "<Pairing %s / %s>" % (self.fwd.op, self.bwd.op)

    def saved(self, inputs, outputs):
        """What a forward call saves for its backward, in order: the saved
        inputs, then the saved outputs."""
        return [inputs[i] for i in self.saved_inputs] + [outputs[j] for j in self.saved_outputs]

    def backward_args(self, saved, grads, grad_arg):
        """The backward export's inputs, in its manifest's order, from what
        the forward saved (saved(), in its order) and the gradients of the
        forward's outputs (grads, one per output, None where autograd gave
        none): grad_arg(j, g, t) makes the argument of output j's gradient
        g for backward input t (converting, or making zeros for None)."""
        ns = len(self.saved_inputs)
        by_input = dict(zip(self.saved_inputs, saved[:ns]))
        by_output = dict(zip(self.saved_outputs, saved[ns:]))
        args = []
        for (kind, i), t in zip(self.bwd_inputs, self.bwd.inputs):
            if kind == "input":
                args.append(by_input[i])
            elif kind == "output":
                args.append(by_output[i])
            else:
                args.append(grad_arg(i, grads[i], t))
        return args

    def input_gradients(self, results, needs):
        """Per forward input, its gradient from the backward's results
        (outputs in its manifest's order), or None: no gradient output, or
        needs[i] false."""
        return [None if k is None or not needs[i] else results[k] for i, k in enumerate(self.input_grads)]


def _grad_names(name):
    return ("d" + name, "d_" + name)


def _shape(t):
    return [d.src for d in t.shape]


def pair(fwd, bwd):
    """The Pairing of manifests fwd and bwd; ManifestError, naming both ops
    and the tensor or option, where bwd is not fwd's backward."""
    what = "%s with backward %s" % (fwd.op, bwd.op)

    def bad(msg):
        return ManifestError("%s: %s" % (what, msg))

    if bwd.op != fwd.op + "_bwd":
        raise bad("not its backward: the backward of %s is %s_bwd" % (fwd.op, fwd.op))
    if fwd.target.name != bwd.target.name:
        raise bad("exports for %s and %s: export both for one target" % (fwd.target.name, bwd.target.name))
    for k in sorted(set(fwd.options) & set(bwd.options)):
        if fwd.options[k] != bwd.options[k]:
            raise bad("option %s is %s in the forward but %s in the backward: export both with one value"
                      % (k, fwd.options[k], bwd.options[k]))
    if set(fwd.size_names) != set(bwd.size_names):
        raise bad("sizes %s and %s differ" % (", ".join(fwd.size_names), ", ".join(bwd.size_names)))
    for n in fwd.size_names:
        # A size the forward's inputs do not give alone is the export's own.
        if fwd.shape.get(n) != bwd.shape.get(n) and not any(
                d.plain_name == n for t in fwd.inputs for d in t.shape):
            raise bad("size %s is %s in the forward export but %s in the backward: export both at one %s"
                      % (n, fwd.shape.get(n), bwd.shape.get(n), n))

    fin = {t.name: i for i, t in enumerate(fwd.inputs)}
    fout = {t.name: j for j, t in enumerate(fwd.outputs)}
    grad_of_out = {g: j for j, t in enumerate(fwd.outputs) for g in _grad_names(t.name)}
    grad_of_in = {g: i for i, t in enumerate(fwd.inputs) for g in _grad_names(t.name)}

    bwd_inputs, got_grad = [], {}
    for t in bwd.inputs:
        if t.name in fin or t.name in fout:
            kind, idx = ("input", fin[t.name]) if t.name in fin else ("output", fout[t.name])
            f = fwd.inputs[idx] if kind == "input" else fwd.outputs[idx]
            if (t.dtype, _shape(t)) != (f.dtype, _shape(f)):
                raise bad("%s is %s%s in the backward but %s%s in the forward"
                          % (t.name, t.dtype, _shape(t), f.dtype, _shape(f)))
            bwd_inputs.append((kind, idx))
        elif t.name in grad_of_out:
            j = grad_of_out[t.name]
            o = fwd.outputs[j]
            if _shape(t) != _shape(o):
                raise bad("%s, the gradient of %s, has shape %s; %s has %s" % (t.name, o.name, _shape(t), o.name, _shape(o)))
            if j in got_grad:
                raise bad("%s and %s are both gradients of %s" % (got_grad[j], t.name, o.name))
            got_grad[j] = t.name
            bwd_inputs.append(("grad", j))
        else:
            raise bad("backward input %s is neither a tensor of %s nor the gradient of one of its outputs "
                      "(d<output> or d_<output>)" % (t.name, fwd.op))
    missing = [o.name for j, o in enumerate(fwd.outputs) if j not in got_grad]
    if missing:
        raise bad("the backward takes no gradient of output %s" % ", ".join(missing))

    input_grads = [None] * len(fwd.inputs)
    for k, t in enumerate(bwd.outputs):
        if t.name not in grad_of_in:
            raise bad("backward output %s is the gradient of no input of %s (d<input> or d_<input>)" % (t.name, fwd.op))
        i = grad_of_in[t.name]
        x = fwd.inputs[i]
        if _shape(t) != _shape(x):
            raise bad("%s, the gradient of %s, has shape %s; %s has %s" % (t.name, x.name, _shape(t), x.name, _shape(x)))
        if input_grads[i] is not None:
            raise bad("%s and %s are both gradients of %s" % (bwd.outputs[input_grads[i]].name, t.name, x.name))
        input_grads[i] = k
    return Pairing(fwd, bwd, bwd_inputs, input_grads)
