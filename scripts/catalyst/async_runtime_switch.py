"""Switches PennyLane Catalyst's link step between the wheel's MLIR async
runtime and ours (docs/catalyst.md), without touching the installed wheel.

    from async_runtime_switch import our_runtime
    with our_runtime():                 # or our_runtime("/path/to/libmlir_async_runtime.so")
        f = qjit(program, async_qnodes=True)
        f(0.3)                          # compiled and linked here: our runtime
    # programs compiled from here on link the wheel's runtime again

`use_our_runtime()` and `use_wheel_runtime()` do the same without a `with`.
The switch is the link command: it points CATALYST_CC at catalyst-cc (beside
this file), which Catalyst reads at every link. A program keeps the runtime
it was linked with: qjit links at the first call (or at definition with
argument types), so the switch must be on then. A CATALYST_CC the user had
set stays the compiler that links (catalyst-cc runs it).
"""

import os
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINK_COMMAND = HERE / "catalyst-cc"
DEFAULT_LIBRARY = HERE.parent.parent / "target" / "release" / "libmlir_async_runtime.so"
_VARIABLES = ("CATALYST_CC", "CATALYST_REAL_CC", "MLIR_ASYNC_RS_LIB")


def use_our_runtime(library=None):
    """Programs linked from now on use `library` (default: this checkout's
    release build). Returns the previous settings, for `restore`."""
    library = Path(library or os.environ.get("MLIR_ASYNC_RS_LIB") or DEFAULT_LIBRARY).resolve()
    if not library.is_file():
        # Catalyst falls back silently to another compiler when the link
        # command fails: refuse here instead.
        raise FileNotFoundError(f"no runtime library at {library}")
    saved = {name: os.environ.get(name) for name in _VARIABLES}
    user_cc = saved["CATALYST_CC"]
    if user_cc and Path(user_cc).resolve() != LINK_COMMAND:
        os.environ["CATALYST_REAL_CC"] = user_cc
    os.environ["CATALYST_CC"] = str(LINK_COMMAND)
    os.environ["MLIR_ASYNC_RS_LIB"] = str(library)
    return saved


def restore(saved):
    """Puts back the settings `use_our_runtime` returned."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def use_wheel_runtime():
    """Programs linked from now on use the wheel's runtime (a CATALYST_CC
    that catalyst-cc was running becomes CATALYST_CC again)."""
    if os.environ.get("CATALYST_CC") and Path(os.environ["CATALYST_CC"]).resolve() == LINK_COMMAND:
        real = os.environ.pop("CATALYST_REAL_CC", None)
        if real:
            os.environ["CATALYST_CC"] = real
        else:
            os.environ.pop("CATALYST_CC")
    os.environ.pop("MLIR_ASYNC_RS_LIB", None)


@contextmanager
def our_runtime(library=None):
    """Within the block, programs are linked with our runtime."""
    saved = use_our_runtime(library)
    try:
        yield
    finally:
        restore(saved)
