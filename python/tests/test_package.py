"""The package's build description (pyproject.toml), without torch and
without building a wheel: it parses, names every package folder, reads its
version from fp8gen_torch.__version__, and never makes torch a hard
dependency; where setuptools is installed, the source distribution it
builds holds every module of the package.
"""

import ast
import contextlib
import glob
import io
import os
import re
import shutil
import tarfile
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PYPROJECT = os.path.join(ROOT, "pyproject.toml")

try:
    import tomllib  # Python 3.11
except ImportError:
    tomllib = None


def package_version():
    """fp8gen_torch.__version__, read as setuptools reads it (no import)."""
    with open(os.path.join(ROOT, "fp8gen_torch", "__init__.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


@unittest.skipIf(tomllib is None, "tomllib needs Python 3.11")
class PyprojectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(PYPROJECT, "rb") as f:
            cls.data = tomllib.load(f)

    def test_build_system(self):
        bs = self.data["build-system"]
        self.assertEqual(bs["build-backend"], "setuptools.build_meta")
        self.assertTrue(all(r.startswith("setuptools") for r in bs["requires"]), bs["requires"])

    def test_project(self):
        p = self.data["project"]
        self.assertEqual(p["requires-python"], ">=3.9")
        self.assertIn("version", p["dynamic"])
        self.assertEqual(self.data["tool"]["setuptools"]["dynamic"]["version"], {"attr": "fp8gen_torch.__version__"})
        self.assertRegex(package_version() or "", r"^\d+\.\d+\.\d+$")
        self.assertTrue(os.path.exists(os.path.join(ROOT, p["readme"])))
        # torch is never installed by this package, only named as an extra.
        self.assertFalse([d for d in p.get("dependencies", []) if re.match(r"torch\b", d)])
        self.assertTrue(any(re.match(r"torch\b", d) for d in p["optional-dependencies"]["torch"]))

    def test_every_package_folder_listed(self):
        listed = set(self.data["tool"]["setuptools"]["packages"])
        found = {os.path.relpath(os.path.dirname(p), ROOT).replace(os.sep, ".")
                 for p in glob.glob(os.path.join(ROOT, "fp8gen_torch", "**", "__init__.py"), recursive=True)}
        self.assertEqual(listed, found)


class SdistTest(unittest.TestCase):
    def test_sdist_holds_every_module(self):
        try:
            import setuptools
            from setuptools import build_meta
        except ImportError:
            self.skipTest("no setuptools")
        major = int(re.match(r"\d+", setuptools.__version__).group())
        if major < 61:
            self.skipTest("setuptools %s reads no [project] table (pyproject.toml asks for 61 or later)"
                          % setuptools.__version__)
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "dist")
            os.makedirs(out)
            os.chdir(ROOT)
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    name = build_meta.build_sdist(out)
            finally:
                os.chdir(cwd)
                for d in glob.glob(os.path.join(ROOT, "*.egg-info")):
                    shutil.rmtree(d, ignore_errors=True)
            with tarfile.open(os.path.join(out, name)) as tf:
                names = tf.getnames()
        top = name[:-len(".tar.gz")]
        want = {top + "/" + os.path.relpath(p, ROOT).replace(os.sep, "/")
                for p in glob.glob(os.path.join(ROOT, "fp8gen_torch", "**", "*.py"), recursive=True)}
        self.assertTrue(want, "no modules found")
        self.assertLessEqual(want, set(names))
        self.assertIn(top + "/pyproject.toml", names)
        self.assertTrue(top.endswith("-" + package_version()), top)


if __name__ == "__main__":
    unittest.main()
