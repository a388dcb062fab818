"""The manifest reader and the expression evaluator, without torch.

Env:
  FP8GEN_EXPORTS     folder searched (recursively) for manifest.json files;
                     default /work/exports-sample
  FP8GEN_EXPR_CASES  a JSON file: a list of {"expr", "env", "value", "error"}
                     that Go's expr package produced; every case must match
"""

import copy
import glob
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fp8gen_torch import manifest as mf  # noqa: E402
from fp8gen_torch.manifest import Expr, ExprError, ManifestError, ShapeError  # noqa: E402

EXPORTS = os.environ.get("FP8GEN_EXPORTS", "/work/exports-sample")


def export_dirs():
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(EXPORTS, "**", "manifest.json"), recursive=True))


def read_json(d):
    with open(os.path.join(d, "manifest.json")) as f:
        return json.load(f)


class ExportsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dirs = export_dirs()
        if not cls.dirs:
            raise unittest.SkipTest("no manifest.json under %s (set FP8GEN_EXPORTS)" % EXPORTS)
        print("\n  %d exports under %s" % (len(cls.dirs), EXPORTS), file=sys.stderr)

    def test_parse_and_verify_every_export(self):
        for d in self.dirs:
            with self.subTest(export=d):
                m = mf.load_manifest(d)
                self.assertEqual(m.version, 1)
                self.assertTrue(m.kernels)
                self.assertEqual(mf.sha256_hex(m.source_bytes), m.source.sha256)
                self.assertEqual(m.code_object is None, m.code_object_bytes is None)

    def test_own_shape_accepted(self):
        for d in self.dirs:
            with self.subTest(export=d):
                m = mf.load_manifest(d)
                p = m.check(dict(m.shape))
                self.assertEqual(len(p.grids), len(m.kernels))
                for t in m.tensors:
                    self.assertEqual(len(p.dims[t.name]), len(t.shape))
                    self.assertLessEqual(p.elems[t.name], m.max_elements)
                for g in p.grids:
                    self.assertTrue(all(0 <= v <= mf.GRID_MAX for v in g))

    def test_non_multiple_size(self):
        n = 0
        for d in self.dirs:
            m = mf.load_manifest(d)
            for s in m.sizes:
                if s.multiple_of == 1:
                    continue
                sh = dict(m.shape)
                sh[s.name] = m.shape[s.name] + 1
                with self.assertRaisesRegex(ShapeError, r"size %s=\d+: this build is compiled for multiples of %d"
                                            % (s.name, s.multiple_of)):
                    m.check(sh)
                n += 1
        self.assertGreater(n, 0, "no export has a size with multiple_of > 1")

    def test_missing_zero_negative_unknown_size(self):
        for d in self.dirs:
            m = mf.load_manifest(d)
            with self.subTest(export=d):
                for s in m.sizes:
                    sh = dict(m.shape)
                    del sh[s.name]
                    with self.assertRaisesRegex(ShapeError, "size %s missing" % s.name):
                        m.check(sh)
                    for bad in (0, -m.shape[s.name]):
                        sh = dict(m.shape, **{s.name: bad})
                        with self.assertRaisesRegex(ShapeError, "size %s=%d must be positive" % (s.name, bad)):
                            m.check(sh)
                with self.assertRaisesRegex(ShapeError, "unknown size ZZ"):
                    m.check(dict(m.shape, ZZ=16))

    def test_constraint_violation(self):  # noqa: C901
        # For each constraint, grow one of its sizes (others at the export's
        # shape) until it fails; check() must then name the constraint's why.
        found = 0
        for d in self.dirs:
            m = mf.load_manifest(d)
            mult = {s.name: s.multiple_of for s in m.sizes}
            for c in m.constraints:
                for name in sorted(c.expr.names):
                    v = m.shape[name]
                    while v < 1 << 40:
                        v *= 2
                        sh = dict(m.shape, **{name: v})
                        if v % mult[name]:
                            continue
                        try:
                            ok = c.expr.eval(sh)
                        except ExprError:
                            ok = 0
                        if ok == 0:
                            with self.assertRaises(ShapeError) as cm:
                                m.check(sh)
                            # check() names the first constraint, in the
                            # manifest's order, that fails at sh.
                            first = next(x for x in m.constraints if not _holds(x, sh))
                            self.assertIn(first.why, str(cm.exception))
                            found += 1
                            break
        self.assertGreater(found, 0, "no constraint could be violated (rowwise_cast's 4096 >= K should)")

    def test_rowwise_block_k(self):
        for d in self.dirs:
            m = mf.load_manifest(d)
            if m.op != "rowwise_cast" or not m.constraints:
                continue
            c = m.constraints[0]
            if c.expr.src != "4096 >= K":
                continue
            m.check(dict(m.shape, K=4096))
            with self.assertRaisesRegex(ShapeError, "4096 >= K fails: a one-pass schedule"):
                m.check(dict(m.shape, K=4096 + 16))

    def test_too_many_elements(self):
        for d in self.dirs:
            m = mf.load_manifest(d)
            with self.subTest(export=d):
                hit = False
                for s in m.sizes:
                    v = m.shape[s.name]
                    while not hit and v < 1 << 50:
                        v *= 2
                        try:
                            m.check(dict(m.shape, **{s.name: v}))
                        except ShapeError as e:
                            if "elements, more than this build's" in str(e):
                                self.assertIn("%d-bit indexing reaches (%d)" % (m.index_bits, m.max_elements), str(e))
                                hit = True
                            break  # a constraint (or the grid) failed first: try the next size
                    if hit:
                        break
                self.assertTrue(hit, "no single size grew a tensor past max_elements")

    def test_tensorwise_scratch_and_grouped_status(self):
        seen = set()
        for d in self.dirs:
            m = mf.load_manifest(d)
            if m.op == "tensorwise_cast":
                amax = m.tensor["amax"]
                self.assertEqual((amax.role, amax.dtype, amax.init), ("scratch", "f32", 0))
                self.assertIsNone(amax.status)
                seen.add(m.op)
            if m.op == "grouped_colwise_cast":
                self.assertEqual(m.tensor["offsets"].dtype, "i32")
                self.assertEqual(m.tensor["offsets"].role, "input")
                st = m.tensor["status"]
                self.assertEqual((st.role, st.dtype, st.init), ("scratch", "i32", 0))
                self.assertTrue(st.status)
                # Every size is a dimension of an input alone: a loader infers them.
                plain = {dd.plain_name for t in m.inputs for dd in t.shape}
                self.assertLessEqual(set(m.size_names), plain)
                seen.add(m.op)
        if not seen:
            self.skipTest("neither tensorwise_cast nor grouped_colwise_cast among the exports")


class RefusalsTest(unittest.TestCase):
    def setUp(self):
        dirs = export_dirs()
        if not dirs:
            self.skipTest("no exports under %s" % EXPORTS)
        self.src = dirs[0]
        self.data = read_json(self.src)

    def refuse(self, data, pattern):
        with self.assertRaisesRegex(ManifestError, pattern):
            mf.parse(json.dumps(data))

    def test_version(self):
        for v in (2, 0, "1"):
            data = dict(self.data, fp8gen_manifest=v)
            data["new_field_of_v2"] = True  # the version is refused first
            self.refuse(data, r"format version %s; this reader \(fp8gen_torch\) reads version 1" % repr(v).replace("'", "'"))
        data = dict(self.data)
        del data["fp8gen_manifest"]
        self.refuse(data, "no fp8gen_manifest version")

    def test_missing_and_unknown_fields(self):
        for key in mf._TOP:
            if key == "fp8gen_manifest":
                continue
            data = dict(self.data)
            del data[key]
            self.refuse(data, "missing field %s" % key)
        self.refuse(dict(self.data, extra=1), "unknown field extra")
        data = copy.deepcopy(self.data)
        data["tensors"][0]["color"] = "red"
        self.refuse(data, r"tensors\[0\]: unknown field color")
        data = copy.deepcopy(self.data)
        del data["kernels"][0]["grid"]
        self.refuse(data, r"kernels\[0\]: missing field grid")

    def test_bad_values(self):
        def with_(path, value):
            data = copy.deepcopy(self.data)
            obj = data
            for p in path[:-1]:
                obj = obj[p]
            obj[path[-1]] = value
            return data

        self.refuse(with_(["index_bits"], 16), "index_bits 16")
        self.refuse(with_(["kernels"], []), "no kernels")
        self.refuse(with_(["tensors", 0, "role"], "temp"), "role")
        self.refuse(with_(["tensors", 0, "dtype"], "f16"), "unknown dtype")
        self.refuse(with_(["tensors", 0, "shape"], ["M +"]), "unexpected end")
        self.refuse(with_(["tensors", 0, "shape"], ["Q"]), "reads Q, which is not a size")
        self.refuse(with_(["tensors", 0, "init"], 0), "init is for scratch tensors")
        self.refuse(with_(["kernels", 0, "grid"], ["1", "1"]), "want 3 expressions")
        self.refuse(with_(["kernels", 0, "params", 0, "kind"], "pointer"), "neither a tensor nor a size")
        self.refuse(with_(["sizes", 0, "multiple_of"], 0), "out of range")
        self.refuse(with_(["source", "file"], "../etc/passwd"), "not a name in the export folder")
        self.refuse(with_(["max_elements"], 1.5), "want an integer")
        self.refuse(with_(["kernels", 0, "block"], [256, 1]), "3 positive integers")

    def test_sha_mismatch_and_missing_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "e")
            shutil.copytree(self.src, d)
            mf.load_manifest(d)
            src = os.path.join(d, self.data["source"]["file"])
            with open(src, "ab") as f:
                f.write(b"// tampered\n")
            with self.assertRaisesRegex(ManifestError, "SHA-256 [0-9a-f]{64}; the manifest says " + self.data["source"]["sha256"]):
                mf.load_manifest(d)
            mf.load_manifest(d, verify=False)
            os.remove(src)
            with self.assertRaisesRegex(ManifestError, "named by"):
                mf.load_manifest(d)
        with self.assertRaisesRegex(ManifestError, "manifest.json"):
            mf.load_manifest(os.path.join(EXPORTS, "no-such-export"))

    def test_code_object_sha(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "e")
            shutil.copytree(self.src, d)
            data = read_json(d)
            with open(os.path.join(d, "k.sm_90.cubin"), "wb") as f:
                f.write(b"\x7fELF not really")
            data["code_object"] = {"file": "k.sm_90.cubin", "sha256": "0" * 64, "arch": "sm_90", "compiler": "x"}
            with open(os.path.join(d, "manifest.json"), "w") as f:
                json.dump(data, f)
            with self.assertRaisesRegex(ManifestError, "k.sm_90.cubin: SHA-256"):
                mf.load_manifest(d)
            data["code_object"]["sha256"] = mf.sha256_hex(b"\x7fELF not really")
            with open(os.path.join(d, "manifest.json"), "w") as f:
                json.dump(data, f)
            self.assertEqual(mf.load_manifest(d).code_object_bytes, b"\x7fELF not really")


def synthetic(**over):
    """A small hand-made manifest: one size M, a grid of M blocks."""
    data = {
        "fp8gen_manifest": 1, "op": "toy", "doc": "", "fp8": None, "options": {}, "schedule": {},
        "target": {"name": "sm_90", "vendor": "nvidia", "product": "H100/H200", "wave_size": 32},
        "index_bits": 32, "max_elements": 1000, "shape": {"M": 16},
        "sizes": [{"name": "M", "multiple_of": 1}], "constraints": None,
        "tensors": [{"name": "x", "role": "input", "dtype": "f32", "shape": ["M"], "doc": ""},
                    {"name": "s", "role": "scratch", "dtype": "i32", "shape": ["1"], "init": 0,
                     "status": "0, or bad", "doc": ""}],
        "source": {"file": "toy.cu", "sha256": "0" * 64}, "compile_flags": ["-O3", "--fmad=false"], "code_object": None,
        "kernels": [{"name": "k", "symbol": "k_0123abcd", "params": [{"name": "x", "kind": "tensor"},
                                                                      {"name": "M", "kind": "size", "dtype": "i32"}],
                     "grid": ["M * 4096", "1", "1"], "block": [256, 1, 1],
                     "dynamic_lds_bytes": 0, "static_lds_bytes": 0}],
    }
    data.update(over)
    return mf.parse(json.dumps(data))


class SyntheticTest(unittest.TestCase):
    def test_grid_limit(self):
        m = synthetic(max_elements=1 << 40)
        m.check({"M": (2 ** 31 - 1) // 4096})
        with self.assertRaisesRegex(ShapeError, r"kernel k_0123abcd: \d+ blocks along axis 0, more than a launch takes"):
            m.check({"M": 2 ** 31 // 4096 + 1})

    def test_max_elements_and_constraint_errors(self):
        m = synthetic()
        m.check({"M": 1000})
        with self.assertRaisesRegex(ShapeError, "tensor x has 1001 elements"):
            m.check({"M": 1001})
        m = synthetic(constraints=[{"expr": "100 / (M - 16)", "why": "toy"}])
        with self.assertRaisesRegex(ShapeError, "constraint .*division by zero"):
            m.check({"M": 16})
        with self.assertRaisesRegex(ShapeError, "100 / \\(M - 16\\) fails: toy"):
            m.check({"M": 200})
        with self.assertRaisesRegex(ShapeError, "not an integer"):
            m.check({"M": 16.0})

    def test_dependent_launch(self):
        k = dict(name="k", symbol="k_0123abcd", params=None, grid=["M", "1", "1"], block=[256, 1, 1],
                 dynamic_lds_bytes=0, static_lds_bytes=0)
        self.assertFalse(synthetic(kernels=[k]).kernels[0].dependent_launch)
        self.assertTrue(synthetic(kernels=[k, dict(k, dependent_launch=True)]).kernels[1].dependent_launch)
        with self.assertRaisesRegex(ManifestError, r"kernels\[0\]\.dependent_launch: want true or false"):
            synthetic(kernels=[dict(k, dependent_launch=1)])
        with self.assertRaisesRegex(ManifestError, "kernel k_0123abcd: dependent_launch on the first kernel"):
            synthetic(kernels=[dict(k, dependent_launch=True)])
        amd = {"name": "gfx942", "vendor": "amd", "product": "MI300X", "wave_size": 64}
        with self.assertRaisesRegex(ManifestError, "dependent_launch on the first kernel or off NVIDIA"):
            synthetic(target=amd, kernels=[k, dict(k, dependent_launch=True)])

    def test_e8m0_tensor(self):
        # OCP MX's scale bytes: one byte an element, torch.float8_e8m0fnu.
        t = {"name": "x", "role": "input", "dtype": "e8m0", "shape": ["M"], "doc": ""}
        m = synthetic(tensors=[t])
        self.assertEqual((m.tensors[0].dtype, m.tensors[0].itemsize), ("e8m0", 1))
        self.assertEqual(mf.DTYPE_TABLE["e8m0"][1:], ("float8_e8m0fnu", "|u1"))

    def test_null_collections(self):
        m = synthetic(options=None, schedule=None)
        self.assertEqual((m.options, m.schedule, m.constraints), ({}, {}, []))


class ExprTest(unittest.TestCase):
    ENV = {"M": 1000, "K": 333, "BLOCK": 256, "LOOP": 0, "WAVE": 32, "BIG": mf.INT64_MAX}

    def test_values(self):
        for src, want in [
            ("42", 42), ("cdiv(M, BLOCK)", 4), ("cdiv(0, BLOCK)", 0), ("M * K + 1", 333001),
            ("-M / 3", -333), ("-7 / 2", -3), ("7 / -2", -3), ("-7 % 3", -1), ("7 % -3", 1), ("-7 % -3", -1),
            ("min(M, K, 5)", 5), ("max(M, K)", 1000), ("pow2ceil(K)", 512), ("pow2ceil(0)", 1),
            ("pow2ceil(-5)", 1), ("log2(BLOCK)", 8), ("LOOP == 1 || BLOCK >= K", 0), ("!LOOP", 1),
            ("M > K ? M : K", 1000), ("LOOP ? 1 : WAVE == 32 ? 2 : 3", 2), ("1 ? 2 : 3 ? 4 : 5", 2),
            ("1 || M / 0", 1), ("0 && M / 0", 0), ("LOOP ? M / 0 : 7", 7), ("5 && 3", 1), ("0 || -2", 1),
            ("  M+K  ", 1333), ("- -3", 3), ("!!5", 1), ("2 + 3 * 4 - 6 / 4", 13), ("(1 < 2) < 3", 1),
            ("-9223372036854775807 - 1", mf.INT64_MIN), ("BIG", mf.INT64_MAX), ("9223372036854775807", mf.INT64_MAX),
            ("1" + " + 1" * 3000, 3001),
        ]:
            with self.subTest(expr=src):
                self.assertEqual(Expr(src).eval(self.ENV), want)

    def test_errors(self):
        for src in ["", "M +", "(M", "M M", "1 < 2 < 3", "1 == 2 != 3", "foo(1)", "cdiv(1)", "min()",
                    "99999999999999999999", "9223372036854775808", "M $ 1", "M\t+ 1", "M = 1", "M & 1",
                    "N", "M / 0", "M % (M - 1000)", "BIG + 1", "BIG * 2", "-BIG - 2", "cdiv(M, 0)", "cdiv(-1, 2)",
                    "log2(12)", "log2(0)", "pow2ceil(4611686018427387905)", "(-BIG - 1) * 1", "(-BIG - 1) / -1",
                    "(-BIG - 1) % -1", "-(-BIG - 1)", "1 ? 2", "cdiv(1, 2"]:
            with self.subTest(expr=src):
                with self.assertRaises(ExprError):
                    Expr(src).eval(self.ENV)

    def test_names_and_plain(self):
        e = Expr("cdiv(M, ROWS) * K + M")
        self.assertEqual(sorted(e.names), ["K", "M", "ROWS"])
        self.assertIsNone(e.plain_name)
        self.assertEqual(Expr("M").plain_name, "M")
        self.assertEqual(Expr(" ( M ) ").plain_name, "M")
        self.assertIsNone(Expr("M + 0").plain_name)

    def test_go_cases(self):
        path = os.environ.get("FP8GEN_EXPR_CASES")
        if not path:
            self.skipTest("FP8GEN_EXPR_CASES not set (a JSON list of {expr, env, value, error} from Go)")
        with open(path) as f:
            cases = json.load(f)
        n_err = 0
        for i, c in enumerate(cases):
            with self.subTest(case=i, expr=c["expr"], env=c["env"]):
                if c["error"]:
                    n_err += 1
                    with self.assertRaises(ExprError):
                        Expr(c["expr"]).eval(c["env"])
                else:
                    self.assertEqual(Expr(c["expr"]).eval(c["env"]), c["value"])
        print("\n  %d expression cases from %s (%d errors)" % (len(cases), path, n_err), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()


def _holds(c, sh):
    try:
        return c.expr.eval(sh) != 0
    except ExprError:
        return False
