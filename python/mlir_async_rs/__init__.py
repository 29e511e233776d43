"""mlir-async-rs: a Rust drop-in for MLIR's async runtime
(libmlir_async_runtime.so), packaged for Python users, first of all those of
PennyLane Catalyst (docs/catalyst.md in the repository).

    import mlir_async_rs
    from catalyst import qjit

    with mlir_async_rs.our_runtime():
        f = qjit(program, async_qnodes=True)
        f(0.3)        # compiled and linked here: its async QNodes run on our runtime
    g = qjit(program, async_qnodes=True)
    g(0.3)            # linked after the block: Catalyst's own (C++) runtime

- `library_path()`: the library in this package, for MLIR's Python
  ExecutionEngine (`ExecutionEngine(module, shared_libs=[library_path(),
  runner_utils])`), `mlir-cpu-runner -shared-libs=...`, or
  `python -m mlir_async_rs --path`. It warns in one line
  (`OtherRuntimeLoaded`) when another async runtime is already loaded in
  this process (an earlier engine's).
- `our_runtime()` / `use()` and `restore()`: the switch for Catalyst, with or
  without a `with` block. It sets Catalyst's link command (CATALYST_CC, which
  Catalyst reads at every link) to `catalyst-cc` beside this file, which
  links the program against our library by its absolute path. Catalyst's
  wheel is never touched; a program keeps the runtime it was linked with
  (qjit links at the first call, or at definition with type hints).
- `check()`: compiles a one-QNode program in this process, now, and asks the
  dynamic loader which runtime it binds to (`python -m mlir_async_rs --check`).

Every error is a `SwitchError` with a one-line message.
"""

from __future__ import annotations

import _ctypes
import ctypes
import importlib.metadata
import importlib.util
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

__all__ = [
    "CatalystRuntimeLoaded",
    "LibraryMissing",
    "OtherRuntimeLoaded",
    "Report",
    "RuntimeAlreadyBound",
    "Switch",
    "SwitchError",
    "UnknownCatalyst",
    "__version__",
    "catalyst_version",
    "check",
    "library_path",
    "mapped_runtimes",
    "our_runtime",
    "restore",
    "use",
]

try:
    # The distribution's version, which setup.py reads from the runtime
    # crate's Cargo.toml when the wheel is built.
    __version__: str = importlib.metadata.version("mlir-async-rs")
except importlib.metadata.PackageNotFoundError:  # imported from a checkout's python/
    __version__ = "0+checkout"

PACKAGE_DIR = Path(__file__).resolve().parent
LIBRARY_NAME = "libmlir_async_runtime.so"
# The link command CATALYST_CC is set to; a bash script, shipped executable.
LINK_COMMAND = PACKAGE_DIR / "catalyst-cc"
# The pennylane-catalyst versions whose link step the switch was tested
# with (make catalyst): each reads CATALYST_CC at every link and passes
# -lmlir_async_runtime, which catalyst-cc replaces. Another version may link
# differently, and Catalyst falls back silently to another compiler when a
# link command fails: the switch refuses it rather than pretend.
KNOWN_CATALYST_VERSIONS = ("0.15.0",)
# A function every async runtime exports, and one only ours does
# (docs/introspection-abi.md).
_RUNTIME_SYMBOL = "mlirAsyncRuntimeExecute"
_OURS_SYMBOL = "rust_mlir_async_runtime_stats"
_VARIABLES = ("CATALYST_CC", "CATALYST_REAL_CC", "MLIR_ASYNC_RS_LIB")


class SwitchError(RuntimeError):
    """The switch cannot do what was asked; the message is one line."""


class LibraryMissing(SwitchError, FileNotFoundError):
    """The runtime library is not where it should be."""


class UnknownCatalyst(SwitchError):
    """pennylane-catalyst is missing, or a version whose link step the switch does not know."""


class RuntimeAlreadyBound(SwitchError):
    """Another async runtime is in the process's global symbol scope: every
    program binds to it, whatever it was linked with."""


class CatalystRuntimeLoaded(RuntimeWarning):
    """Catalyst's C++ runtime was loaded before the switch (by programs
    compiled earlier), and those programs stay on it."""


class OtherRuntimeLoaded(RuntimeWarning):
    """Another async runtime (not ours) is already loaded in this process,
    e.g. by an ExecutionEngine given MLIR's C++ runtime: an engine given
    ours binds to ours only where our init hook can fill its symbol map."""


def library_path() -> Path:
    """The absolute path of the runtime library in this package: what an
    MLIR Python ExecutionEngine takes in `shared_libs`.

    Raises `LibraryMissing` when the file is not there (a broken install, or
    this module imported from a checkout's python/ directory, which has no
    library: pass the checkout's build to `use()` instead). Warns
    `OtherRuntimeLoaded`, in one line, when another async runtime is already
    loaded in this process."""
    path = _package_library()
    others = [p for p in mapped_runtimes() if p != path and not _is_ours(p)]
    if others:
        warnings.warn(
            f"mlir_async_rs: another async runtime is already loaded in this process ({others[0]}): "
            f"an ExecutionEngine given {path} runs on ours only where our init hook fills the engine's "
            f"symbol map (bindings whose LLVM is exported, e.g. xtc's LLVM 22); where it cannot (it says "
            f"so on stderr, e.g. torch-mlir's LLVM 24), the engine's code binds to the runtime loaded first",
            OtherRuntimeLoaded,
            stacklevel=2,
        )
    return path


def _package_library() -> Path:
    """library_path() without the check of the process."""
    path = PACKAGE_DIR / LIBRARY_NAME
    if not path.is_file():
        raise LibraryMissing(
            f"mlir_async_rs: {LIBRARY_NAME} is missing from the package at {PACKAGE_DIR} "
            f"(reinstall the wheel; from a checkout, pass the library's path or set MLIR_ASYNC_RS_LIB)"
        )
    return path


# ---- what the dynamic loader says -------------------------------------------------


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


# dlopen(NULL): symbol look-ups through it search the global scope (the
# executable, its dependencies, LD_PRELOAD, libraries opened RTLD_GLOBAL).
_GLOBAL = ctypes.CDLL(None)
_dladdr = _GLOBAL.dladdr
_dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
_dladdr.restype = ctypes.c_int


def _address(lib: ctypes.CDLL, name: str) -> Optional[int]:
    """dlsym(lib, name), None when not found (lib[name] does not cache)."""
    try:
        return ctypes.cast(lib[name], ctypes.c_void_p).value
    except AttributeError:
        return None


def _file_of(address: int) -> Path:
    """The file of the loaded object that holds `address` (dladdr)."""
    info = _DlInfo()
    if not _dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        raise SwitchError(f"mlir_async_rs: dladdr found no object at {address:#x}")
    return Path(os.fsdecode(info.dli_fname)).resolve()


def _loaded(path: Path) -> Optional[ctypes.CDLL]:
    """A new reference to `path` if the process has loaded it, else None
    (RTLD_NOLOAD); give it back with `_release`."""
    try:
        return ctypes.CDLL(str(path), mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None


def _release(handle: ctypes.CDLL) -> None:
    """dlclose: the reference `_loaded` took, so that Catalyst's own dlclose
    of a program still unloads it."""
    _ctypes.dlclose(handle._handle)


def _is_ours(path: Path) -> bool:
    handle = _loaded(path)
    if handle is None:
        return False
    try:
        return _address(handle, _OURS_SYMBOL) is not None
    finally:
        _release(handle)


def mapped_runtimes() -> List[Path]:
    """The async runtime libraries mapped into this process (/proc/self/maps):
    every file whose name holds "async_runtime" or "async_floor"."""
    names = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        path = fields[5].strip() if len(fields) == 6 else ""
        if path.startswith("/") and ("async_runtime" in path or "async_floor" in path):
            names.add(Path(path).resolve())
    return sorted(names)


def _catalyst_lib_dir() -> Optional[Path]:
    """catalyst/lib of the installed pennylane-catalyst (without importing it)."""
    spec = importlib.util.find_spec("catalyst")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent / "lib"


def _is_catalysts(path: Path) -> bool:
    """Whether `path` is the C++ runtime that Catalyst's wheel ships."""
    lib_dir = _catalyst_lib_dir()
    return lib_dir is not None and path.parent == lib_dir and path.name.startswith("libmlir_async_runtime")


def _describe(path: Path) -> str:
    if _is_catalysts(path):
        return "catalyst"
    if _is_ours(path):
        return "ours"
    return "other"


# ---- the switch -------------------------------------------------------------------


def catalyst_version() -> str:
    """The installed pennylane-catalyst's version; `UnknownCatalyst` if none."""
    try:
        return importlib.metadata.version("pennylane-catalyst")
    except importlib.metadata.PackageNotFoundError:
        raise UnknownCatalyst("mlir_async_rs: pennylane-catalyst is not installed in this Python") from None


def _check_catalyst() -> str:
    version = catalyst_version()
    if version not in KNOWN_CATALYST_VERSIONS:
        raise UnknownCatalyst(
            f"mlir_async_rs {__version__} does not know the link command of pennylane-catalyst {version} "
            f"(it knows {', '.join(KNOWN_CATALYST_VERSIONS)}): its programs could silently keep Catalyst's "
            f"own runtime, so the switch refuses"
        )
    return version


def _check_process(library: Path) -> None:
    """Refuses when another runtime is in the global scope; warns when
    Catalyst's runtime is already loaded by programs compiled earlier."""
    address = _address(_GLOBAL, _RUNTIME_SYMBOL)
    if address is not None:
        owner = _file_of(address)
        if owner != library:
            raise RuntimeAlreadyBound(
                f"mlir_async_rs: {owner} is in this process's global symbol scope (LD_PRELOAD, or loaded "
                f"with RTLD_GLOBAL), so every program binds to it whatever it links: the switch cannot "
                f"change that; start Python without it"
            )
    catalysts = [p for p in mapped_runtimes() if _is_catalysts(p)]
    if catalysts:
        warnings.warn(
            f"mlir_async_rs: Catalyst's C++ async runtime is already loaded in this process "
            f"({catalysts[0]}): programs compiled before the switch stay on it; those linked from now on "
            f"use {library}",
            CatalystRuntimeLoaded,
            stacklevel=4,  # _check_process, _switch, use or our_runtime, the caller
        )


class Switch:
    """One use of our runtime: programs Catalyst links while it is on use
    `library`. `restore()` (or the end of a `with` block) puts back the
    environment it found, and with it every switch made after it."""

    def __init__(self, library: Path, saved: Dict[str, Optional[str]]) -> None:
        self.library = library
        self._saved = saved
        self.active = True

    def restore(self) -> None:
        """Puts back CATALYST_CC, CATALYST_REAL_CC and MLIR_ASYNC_RS_LIB as
        they were before this switch; does nothing the second time."""
        if not self.active:
            return
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        # Switches made after this one are undone with it.
        while _active:
            switch = _active.pop()
            switch.active = False
            if switch is self:
                break

    def __enter__(self) -> "Switch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def __repr__(self) -> str:
        return f"<mlir_async_rs.Switch {'on' if self.active else 'restored'}: {self.library}>"


_active: List[Switch] = []


def use(library: Union[str, "os.PathLike[str]", None] = None) -> Switch:
    """From now on, the programs Catalyst links use our runtime.

    `library`: the runtime to link; default MLIR_ASYNC_RS_LIB if set, else
    this package's (`library_path()`). Returns the `Switch`: undo it with
    `restore()`, or use it as a context manager. A CATALYST_CC you had set
    stays the compiler that links (as CATALYST_REAL_CC).

    Raises `LibraryMissing`, `UnknownCatalyst` (pennylane-catalyst missing,
    or a version the switch does not know) or `RuntimeAlreadyBound`; warns
    `CatalystRuntimeLoaded` when Catalyst's runtime is already loaded here.
    """
    return _switch(library)


def _switch(library: Union[str, "os.PathLike[str]", None]) -> Switch:
    chosen = library or os.environ.get("MLIR_ASYNC_RS_LIB")
    path = Path(chosen).resolve() if chosen else _package_library()
    if not path.is_file():
        raise LibraryMissing(f"mlir_async_rs: no runtime library at {path}")
    if not os.access(LINK_COMMAND, os.X_OK):
        raise SwitchError(f"mlir_async_rs: the link command {LINK_COMMAND} is missing or not executable "
                          f"(reinstall the wheel)")
    _check_catalyst()
    _check_process(path)
    saved = {name: os.environ.get(name) for name in _VARIABLES}
    user_cc = saved["CATALYST_CC"]
    if user_cc and Path(user_cc).resolve() != LINK_COMMAND:
        os.environ["CATALYST_REAL_CC"] = user_cc
    os.environ["CATALYST_CC"] = str(LINK_COMMAND)
    os.environ["MLIR_ASYNC_RS_LIB"] = str(path)
    switch = Switch(path, saved)
    _active.append(switch)
    return switch


def our_runtime(library: Union[str, "os.PathLike[str]", None] = None) -> Switch:
    """The switch as a context manager: programs linked inside

        with mlir_async_rs.our_runtime():
            ...

    use our runtime; after the block, the environment is as it was.
    The same as `use(library)`, which see."""
    return _switch(library)


def restore(switch: Optional[Switch] = None) -> None:
    """Undoes `switch`, or else the last `use()` still on (nothing when none is)."""
    if switch is None:
        if not _active:
            return
        switch = _active[-1]
    switch.restore()


# ---- check ------------------------------------------------------------------------


@dataclass
class Report:
    """Which runtime a Catalyst program compiled in this process binds to."""

    runtime: str  # "ours", "catalyst" (the C++ runtime of Catalyst's wheel) or "other"
    bound_to: Path  # the library that defines the program's mlirAsyncRuntimeExecute
    catalyst_version: str
    link_command: Optional[str]  # CATALYST_CC, None when Catalyst chooses
    program: Path
    mapped: List[Path] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join([
            f"runtime: {self.runtime}",
            f"library: {self.bound_to}",
            f"catalyst: {self.catalyst_version}",
            f"link command: {self.link_command or '(Catalyst chooses: CATALYST_CC is not set)'}",
            f"program: {self.program}",
            "mapped: " + ", ".join(str(p) for p in self.mapped),
        ])


def check() -> Report:
    """Compiles a one-QNode program with async QNodes now, with this
    process's settings (inside `our_runtime()`, or not), and asks the
    dynamic loader what its calls to the async runtime bind to: a program
    that Catalyst dlopens (RTLD_LOCAL) resolves a symbol in the global
    scope first, then in its own dependencies."""
    version = catalyst_version()
    import pennylane as qml  # type: ignore[import-not-found, unused-ignore]
    from catalyst import qjit  # type: ignore[import-not-found, unused-ignore]

    device = qml.device("lightning.qubit", wires=1)

    @qml.qnode(device)  # type: ignore[untyped-decorator, misc, unused-ignore]
    def probe(x: float) -> Any:
        qml.RX(x, wires=0)
        return qml.expval(qml.PauliZ(0))

    def mlir_async_rs_probe(x: float) -> Any:
        return probe(x)

    compiled = qjit(mlir_async_rs_probe, async_qnodes=True)
    compiled(0.5)
    program = Path(str(compiled.workspace)) / "mlir_async_rs_probe.so"
    handle = _loaded(program)
    if handle is None:
        raise SwitchError(f"mlir_async_rs: Catalyst's program {program} is not loaded")
    try:
        address = _address(_GLOBAL, _RUNTIME_SYMBOL) or _address(handle, _RUNTIME_SYMBOL)
    finally:
        _release(handle)
    if address is None:
        raise SwitchError(f"mlir_async_rs: {program} has no {_RUNTIME_SYMBOL} (not an async program?)")
    bound = _file_of(address)
    return Report(runtime=_describe(bound), bound_to=bound, catalyst_version=version,
                  link_command=os.environ.get("CATALYST_CC"), program=program, mapped=mapped_runtimes())
