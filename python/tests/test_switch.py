"""The switch's bookkeeping (mlir_async_rs.use/restore/our_runtime): what
it does to the environment, on its own, nested, undone out of order, with
a CATALYST_CC of the user's, and its refusals. Runs against whichever
mlir_async_rs is importable (make catalyst-ci: the installed wheel's, in a
venv with pennylane-catalyst 0.15.0); needs no program to be compiled.

    python -m unittest discover -s python/tests
"""

import os
import stat
import tempfile
import unittest
import warnings
from pathlib import Path
from unittest import mock

import mlir_async_rs

VARIABLES = ("CATALYST_CC", "CATALYST_REAL_CC", "MLIR_ASYNC_RS_LIB")


class SwitchTest(unittest.TestCase):
    def setUp(self):
        self.saved = {name: os.environ.pop(name, None) for name in VARIABLES}
        self.tmp = tempfile.TemporaryDirectory()
        self.library = Path(self.tmp.name) / "libmlir_async_runtime.so"
        self.library.write_bytes(b"")
        self.other = Path(self.tmp.name) / "other.so"
        self.other.write_bytes(b"")
        # The checks of the installed Catalyst and of the process are
        # tested by wheel_test.py, in real processes.
        patches = [mock.patch.object(mlir_async_rs, "_check_catalyst", return_value="0.15.0"),
                   mock.patch.object(mlir_async_rs, "_check_process")]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def tearDown(self):
        if mlir_async_rs._active:
            mlir_async_rs._active[0].restore()
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.tmp.cleanup()

    def env(self):
        return {name: os.environ.get(name) for name in VARIABLES}

    def test_use_then_restore(self):
        switch = mlir_async_rs.use(self.library)
        self.assertEqual(self.env(), {"CATALYST_CC": str(mlir_async_rs.LINK_COMMAND), "CATALYST_REAL_CC": None,
                                      "MLIR_ASYNC_RS_LIB": str(self.library)})
        self.assertTrue(switch.active)
        mlir_async_rs.restore()
        self.assertEqual(self.env(), dict.fromkeys(VARIABLES))
        self.assertFalse(switch.active)
        mlir_async_rs.restore()  # nothing on: nothing happens
        switch.restore()  # the second time: nothing happens
        self.assertEqual(self.env(), dict.fromkeys(VARIABLES))

    def test_context_manager(self):
        with mlir_async_rs.our_runtime(self.library) as switch:
            self.assertEqual(os.environ["MLIR_ASYNC_RS_LIB"], str(self.library))
            self.assertEqual(switch.library, self.library)
        self.assertEqual(self.env(), dict.fromkeys(VARIABLES))

    def test_restored_after_an_exception(self):
        with self.assertRaises(ZeroDivisionError):
            with mlir_async_rs.our_runtime(self.library):
                1 / 0
        self.assertEqual(self.env(), dict.fromkeys(VARIABLES))

    def test_users_compiler_is_kept(self):
        os.environ["CATALYST_CC"] = "/usr/bin/gcc"
        with mlir_async_rs.our_runtime(self.library):
            self.assertEqual(os.environ["CATALYST_CC"], str(mlir_async_rs.LINK_COMMAND))
            self.assertEqual(os.environ["CATALYST_REAL_CC"], "/usr/bin/gcc")
        self.assertEqual(self.env(), {"CATALYST_CC": "/usr/bin/gcc", "CATALYST_REAL_CC": None,
                                      "MLIR_ASYNC_RS_LIB": None})

    def test_nested(self):
        with mlir_async_rs.our_runtime(self.library):
            with mlir_async_rs.our_runtime(self.other):
                self.assertEqual(os.environ["MLIR_ASYNC_RS_LIB"], str(self.other))
                # The link command is not taken for the user's compiler.
                self.assertIsNone(os.environ.get("CATALYST_REAL_CC"))
            self.assertEqual(os.environ["MLIR_ASYNC_RS_LIB"], str(self.library))
        self.assertEqual(self.env(), dict.fromkeys(VARIABLES))

    def test_restoring_the_outer_undoes_the_inner(self):
        outer = mlir_async_rs.use(self.library)
        inner = mlir_async_rs.use(self.other)
        outer.restore()
        self.assertEqual(self.env(), dict.fromkeys(VARIABLES))
        self.assertFalse(inner.active)
        self.assertEqual(mlir_async_rs._active, [])

    def test_default_library_from_the_environment(self):
        os.environ["MLIR_ASYNC_RS_LIB"] = str(self.other)
        with mlir_async_rs.our_runtime() as switch:
            self.assertEqual(switch.library, self.other)
        self.assertEqual(os.environ["MLIR_ASYNC_RS_LIB"], str(self.other))

    def test_missing_library_is_refused(self):
        missing = Path(self.tmp.name) / "missing.so"
        with self.assertRaises(mlir_async_rs.LibraryMissing) as caught:
            mlir_async_rs.use(missing)
        self.assertEqual(str(caught.exception), f"mlir_async_rs: no runtime library at {missing}")
        self.assertEqual(self.env(), dict.fromkeys(VARIABLES))

    def test_link_command_not_executable_is_refused(self):
        link = Path(self.tmp.name) / "catalyst-cc"
        link.write_text("#!/bin/sh\n")
        link.chmod(stat.S_IRUSR)
        with mock.patch.object(mlir_async_rs, "LINK_COMMAND", link):
            with self.assertRaises(mlir_async_rs.SwitchError) as caught:
                mlir_async_rs.use(self.library)
        self.assertIn("not executable", str(caught.exception))
        self.assertEqual(len(str(caught.exception).splitlines()), 1)

    def test_the_package_has_its_library_and_link_command(self):
        path = mlir_async_rs.library_path()
        self.assertEqual(path.name, "libmlir_async_runtime.so")
        self.assertTrue(os.access(mlir_async_rs.LINK_COMMAND, os.X_OK))


class LibraryPathTest(unittest.TestCase):
    """library_path(), what an MLIR Python ExecutionEngine takes: its
    one-line warning when another runtime is loaded (the real processes:
    scripts/python_engine/engine_test.py)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.package = Path(self.tmp.name)
        (self.package / mlir_async_rs.LIBRARY_NAME).write_bytes(b"")
        patch = mock.patch.object(mlir_async_rs, "PACKAGE_DIR", self.package)
        patch.start()
        self.addCleanup(patch.stop)

    def mapped(self, paths, ours=()):
        return [mock.patch.object(mlir_async_rs, "mapped_runtimes", return_value=paths),
                mock.patch.object(mlir_async_rs, "_is_ours", side_effect=lambda p: p in ours)]

    def test_nothing_else_loaded(self):
        ours = self.package / mlir_async_rs.LIBRARY_NAME
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for patch in self.mapped([ours]):
                self.enterContext(patch)
            self.assertEqual(mlir_async_rs.library_path(), ours)

    def test_another_runtime_loaded_is_said_in_one_line(self):
        cxx = Path("/venv/site-packages/mlir/lib/libmlir_async_runtime.so")
        for patch in self.mapped([cxx]):
            self.enterContext(patch)
        with self.assertWarns(mlir_async_rs.OtherRuntimeLoaded) as caught:
            mlir_async_rs.library_path()
        message = str(caught.warning)
        self.assertEqual(len(message.splitlines()), 1)
        self.assertIn(str(cxx), message)

    def test_our_own_build_elsewhere_is_not_another(self):
        build = Path("/checkout/target/release/libmlir_async_runtime.so")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for patch in self.mapped([build], ours=(build,)):
                self.enterContext(patch)
            mlir_async_rs.library_path()


class CatalystVersionTest(unittest.TestCase):
    def test_unknown_version_is_refused_in_one_line(self):
        with mock.patch.object(mlir_async_rs, "catalyst_version", return_value="0.16.0"):
            with self.assertRaises(mlir_async_rs.UnknownCatalyst) as caught:
                mlir_async_rs._check_catalyst()
        message = str(caught.exception)
        self.assertEqual(len(message.splitlines()), 1)
        self.assertIn("pennylane-catalyst 0.16.0", message)

    def test_catalyst_not_installed(self):
        import importlib.metadata

        def version(name):
            raise importlib.metadata.PackageNotFoundError(name)

        with mock.patch.object(importlib.metadata, "version", version):
            with self.assertRaises(mlir_async_rs.UnknownCatalyst) as caught:
                mlir_async_rs._check_catalyst()
        self.assertEqual(str(caught.exception), "mlir_async_rs: pennylane-catalyst is not installed in this Python")

    def test_known_version_passes(self):
        with mock.patch.object(mlir_async_rs, "catalyst_version", return_value="0.15.0"):
            self.assertEqual(mlir_async_rs._check_catalyst(), "0.15.0")


if __name__ == "__main__":
    warnings.simplefilter("error")
    unittest.main()
