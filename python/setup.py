"""Builds the mlir-async-rs wheel (pyproject.toml has the metadata).

setuptools-rust builds the runtime crate (../runtime) as a plain cdylib,
with no Python bindings (Binding.NoBinding), and copies it into the
package. Two things differ from a Python extension module, on purpose:
- the file keeps the library's own name, libmlir_async_runtime.so, not an
  extension module's (.cpython-311-x86_64-linux-gnu.so): Python never
  imports it; Catalyst's programs and mlir-cpu-runner load it;
- the wheel is tagged py3-none-<platform>: the library does not use
  Python's ABI, so one wheel serves every CPython 3 (make wheel has
  auditwheel set the manylinux platform tag);
- the library is linked without packed relative relocations (DT_RELR),
  which would need glibc 2.36.
The version is the crate's, read from runtime/Cargo.toml here: one number,
written once. Building needs Python 3.11 or later (tomllib); the wheel
runs on 3.9 and later.
"""

import os
import tomllib
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools_rust import Binding, RustExtension, Strip

HERE = Path(__file__).resolve().parent
CRATE = HERE.parent / "runtime" / "Cargo.toml"
VERSION = tomllib.loads(CRATE.read_text())["package"]["version"]
LIBRARY = "mlir_async_rs.libmlir_async_runtime"
# setuptools' scratch files (build/, *.egg-info) go under target/, not
# into the source tree.
SCRATCH = HERE.parent / "target" / "wheel-build" / "setuptools"
SCRATCH.mkdir(parents=True, exist_ok=True)


# Without DT_RELR (runtime/build.rs), the library needs glibc 2.34, not
# 2.36: the wheel is manylinux_2_34 and installs on RHEL 9 and Ubuntu 22.04.
os.environ.setdefault("MLIR_ASYNC_RS_PACK_RELOCS", "0")


class build_ext_library_name(build_ext):
    def get_ext_filename(self, fullname):
        # get_ext_fullpath asks for the last component of the name alone.
        if fullname in (LIBRARY, LIBRARY.rpartition(".")[2]):
            return os.path.join(*fullname.split(".")) + ".so"
        return super().get_ext_filename(fullname)


class bdist_wheel_any_python(bdist_wheel):
    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    version=VERSION,
    rust_extensions=[
        RustExtension(
            LIBRARY,
            path=str(CRATE),
            binding=Binding.NoBinding,
            py_limited_api=False,
            debug=False,
            # The release profile keeps debug info for profiling; a wheel
            # does not need it (symbols stay).
            strip=Strip.Debug,
        )
    ],
    cmdclass={"build_ext": build_ext_library_name, "bdist_wheel": bdist_wheel_any_python},
    options={"build": {"build_base": str(SCRATCH / "build")}, "egg_info": {"egg_base": str(SCRATCH)}},
)
