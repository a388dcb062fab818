"""Pairing a forward export with its backward (fp8gen_torch.grad), without
torch: qk_norm_rope with qk_norm_rope_bwd from $FP8GEN_EXPORTS (default
/work/exports-sample; where it holds no such pair, the sm_90 manifests in
tests/data, written by fp8gen export at the ops' example shapes), and
hand-made mismatches.
"""

import copy
import glob
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fp8gen_torch import grad  # noqa: E402
from fp8gen_torch import manifest as mf  # noqa: E402
from fp8gen_torch.manifest import ManifestError  # noqa: E402

EXPORTS = os.environ.get("FP8GEN_EXPORTS", "/work/exports-sample")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def manifests(op, where=None):
    out = []
    paths = (glob.glob(os.path.join(where, "*.json")) if where else
             glob.glob(os.path.join(EXPORTS, "**", "manifest.json"), recursive=True))
    for p in sorted(paths):
        with open(p) as f:
            data = json.load(f)
        if data.get("op") == op:
            out.append(data)
    return out


def key(data):
    """What a forward and its backward share: target, shared options, shape."""
    opts = {k: v for k, v in data["options"].items() if k not in ("round_norm", "dx")}
    return json.dumps([data["target"]["name"], opts, data["shape"]], sort_keys=True)


class QKPairTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        fw, bw = manifests("qk_norm_rope"), manifests("qk_norm_rope_bwd")
        cls.pairs = [(f, b) for f in fw for b in bw if key(f) == key(b)]
        if not cls.pairs:
            fw, bw = manifests("qk_norm_rope", DATA), manifests("qk_norm_rope_bwd", DATA)
            cls.pairs = [(f, b) for f in fw for b in bw if key(f) == key(b)]
        if not cls.pairs:
            raise unittest.SkipTest("no qk_norm_rope and qk_norm_rope_bwd exports of one target and options under %s"
                                    % EXPORTS)

    def test_map(self):
        for f, b in self.pairs:
            with self.subTest(target=f["target"]["name"], options=f["options"]):
                fm, bm = mf.Manifest(f), mf.Manifest(b)
                p = grad.pair(fm, bm)
                fin = [t.name for t in fm.inputs]
                fout = [t.name for t in fm.outputs]
                got = {t.name: (kind, (fin if kind == "input" else fout)[i])
                       for t, (kind, i) in zip(bm.inputs, p.bwd_inputs)}
                tables = ["inv_freq"] if f["options"].get("angles") == "theta" else ["cos", "sin"]
                want = {n: ("input", n) for n in ["qkv", "q_weight", "k_weight"] + tables}
                want.update({"dq": ("grad", "q"), "dk": ("grad", "k"), "dv": ("grad", "v")})
                self.assertEqual(got, want)
                grads = {fin[i]: bm.outputs[k].name for i, k in enumerate(p.input_grads) if k is not None}
                self.assertEqual(grads, {"qkv": "d_qkv", "q_weight": "d_q_weight", "k_weight": "d_k_weight"})
                self.assertEqual(sorted(fin[i] for i in p.saved_inputs), sorted(["qkv", "q_weight", "k_weight"] + tables))
                self.assertEqual(p.saved_outputs, ())
                self.assertEqual([fin[i] for i in p.differentiable], ["qkv", "q_weight", "k_weight"])

    def test_backward_args_and_gradients(self):
        """What a forward call saves, the backward's arguments made of it
        and of the outputs' gradients, and which gradient goes to which
        input: names stand in for tensors."""
        f, b = self.pairs[0]
        fm, bm = mf.Manifest(f), mf.Manifest(b)
        p = grad.pair(fm, bm)
        fin = [t.name for t in fm.inputs]
        saved = p.saved(fin, ["q", "k", "v"])
        self.assertEqual(saved, [fin[i] for i in p.saved_inputs])
        made = []

        def grad_arg(j, g, t):
            made.append((j, g, t.name))
            return "zeros(%s)" % t.name if g is None else "grad " + g

        args = p.backward_args(saved, ["gq", None, "gv"], grad_arg)
        want = {"dq": "grad gq", "dk": "zeros(dk)", "dv": "grad gv"}
        self.assertEqual(args, [want.get(t.name, t.name) for t in bm.inputs])
        self.assertEqual(made, [(0, "gq", "dq"), (1, None, "dk"), (2, "gv", "dv")])
        res = [t.name for t in bm.outputs]
        needs = [n in ("qkv", "k_weight") for n in fin]
        self.assertEqual(dict(zip(fin, p.input_gradients(res, needs))),
                         {n: {"qkv": "d_qkv", "k_weight": "d_k_weight"}.get(n) for n in fin})
        self.assertEqual(p.input_gradients(res, [True] * len(fin))[:3], ["d_qkv", "d_q_weight", "d_k_weight"])

    def refuse(self, f, b, pattern):
        with self.assertRaisesRegex(ManifestError, pattern):
            grad.pair(mf.Manifest(f), mf.Manifest(b))

    def test_option_mismatch(self):
        f, b = self.pairs[0]
        b2 = copy.deepcopy(b)
        b2["options"]["eps"] = "1e-5" if b["options"]["eps"] != "1e-5" else "1e-6"
        self.refuse(f, b2, "option eps is %s in the forward but %s in the backward" % (f["options"]["eps"], b2["options"]["eps"]))

    def test_not_its_backward(self):
        f, b = self.pairs[0]
        rw = manifests("rowwise_cast") or manifests("rowwise_cast", DATA)
        if rw:
            self.refuse(rw[0], b, "rowwise_cast with backward qk_norm_rope_bwd: not its backward")
        self.refuse(b, b, "not its backward: the backward of qk_norm_rope_bwd is qk_norm_rope_bwd_bwd")

    def test_target_and_head_counts(self):
        f, b = self.pairs[0]
        b2 = copy.deepcopy(b)
        b2["target"] = dict(b["target"], name="gfx950" if b["target"]["name"] != "gfx950" else "sm_90")
        self.refuse(f, b2, "exports for .* and .*: export both for one target")
        b3 = copy.deepcopy(b)
        b3["shape"]["HQ"] = b["shape"]["HQ"] * 2
        self.refuse(f, b3, "size HQ is %d in the forward export but %d in the backward"
                    % (f["shape"]["HQ"], b3["shape"]["HQ"]))
        # B is a dimension of qkv: the exports may differ in it.
        b4 = copy.deepcopy(b)
        b4["shape"]["B"] = b["shape"]["B"] * 2
        grad.pair(mf.Manifest(f), mf.Manifest(b4))

    def test_tensor_mismatches(self):
        f, b = self.pairs[0]

        def with_tensor(which, **over):
            d = copy.deepcopy(b)
            for t in d["tensors"]:
                if t["name"] == which:
                    t.update(over)
            for k in d["kernels"]:
                for p in k["params"]:
                    if p["name"] == which and "name" in over:
                        p["name"] = over["name"]
            return d

        self.refuse(f, with_tensor("q_weight", dtype="f32" if f["options"]["weight"] == "bf16" else "bf16"),
                    r"q_weight is \w+\['D'\] in the backward but \w+\['D'\] in the forward")
        self.refuse(f, with_tensor("dk", shape=["B", "S", "HQ", "D"] if f["options"]["order"] == "bshd"
                                   else ["S", "B", "HQ", "D"]),
                    "dk, the gradient of k, has shape")
        self.refuse(f, with_tensor("dv", name="grad_v"),
                    "backward input grad_v is neither a tensor of qk_norm_rope nor the gradient")
        self.refuse(f, with_tensor("d_k_weight", name="d_k_bias"), "backward output d_k_bias is the gradient of no input")

    def test_missing_gradient_input(self):
        f, b = self.pairs[0]
        d = copy.deepcopy(b)
        d["tensors"] = [t for t in d["tensors"] if t["name"] != "dv"]
        for k in d["kernels"]:
            k["params"] = [p for p in k["params"] if p["name"] != "dv"]
        self.refuse(f, d, "the backward takes no gradient of output v")


class SwigluPairTest(unittest.TestCase):
    """swiglu_probs (y bf16: quant=none) and its backward: h and probs saved,
    dy the gradient of y, dh and d_probs the gradients of h and probs."""

    def load(self, op):
        with open(os.path.join(DATA, op + ".sm_90.json")) as f:
            return json.load(f)

    def test_map(self):
        f, b = self.load("swiglu_probs"), self.load("swiglu_probs_bwd")
        fm, bm = mf.Manifest(f), mf.Manifest(b)
        p = grad.pair(fm, bm)
        self.assertEqual(p.bwd_inputs, (("input", 0), ("input", 1), ("grad", 0)))
        self.assertEqual([bm.outputs[k].name for k in p.input_grads], ["dh", "d_probs"])
        self.assertEqual(p.saved_outputs, ())

    def test_fp8_forward_is_not_differentiable(self):
        # Under quant=rowwise the forward's y is fp8 with its scales: the
        # backward (quant=none) names the option's other value.
        f, b = self.load("swiglu_probs"), self.load("swiglu_probs_bwd")
        f = copy.deepcopy(f)
        f["options"]["quant"] = "rowwise"
        with self.assertRaisesRegex(ManifestError, "option quant is rowwise in the forward but none in the backward"):
            grad.pair(mf.Manifest(f), mf.Manifest(b))


if __name__ == "__main__":
    unittest.main()
