"""A Catalyst user's process at exit (exit_behaviour.py runs it with the
venv's Python): compiles a program with async QNodes, linked against the
wheel's runtime or (--lib) another, calls it, then
  --case return   returns from the script;
  --case alive    first leaves two tokens and a value alive, as Catalyst's
                  generated code once did when a QNode failed (it skipped
                  the reference drops of the error path): made with the
                  runtime's own mlirAsyncRuntimeCreateToken/-Value, called
                  through ctypes on the library the program is bound to;
  --case recompile  calls, on an array of two then of three numbers, a
                  program that sums its argument: the second shape makes
                  Catalyst compile it again and dlclose the first program
                  (whose tasks ran on the runtime's threads), calls the new
                  one, and returns;
  --case thread   keeps calling the program from a daemon thread, and
                  returns from the script while that thread is inside a
                  call (about a second long): QNode tasks queued or
                  running, tokens and values alive, as the interpreter
                  shuts down and the C library's exit runs the runtime's
                  exit handler (ours) or static destructors (C++).
Prints "exiting" on stdout just before the script returns.
"""

import argparse
import ctypes
import sys
import threading
import time
from pathlib import Path

# The checkout's mlir_async_rs (python/), the module of the wheel.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "python"))

import mlir_async_rs  # noqa: E402
import pennylane as qml  # noqa: E402
from catalyst import for_loop, qjit  # noqa: E402

WIRES = 14
_dev = qml.device("lightning.qubit", wires=WIRES)


@qml.qnode(_dev)
def deep(x):
    """A QNode of some tens of milliseconds."""

    @for_loop(0, 1500, 1)
    def layer(i):
        qml.RX(x * i, wires=i % WIRES)
        qml.CNOT(wires=[i % WIRES, (i + 1) % WIRES])

    layer()
    return qml.expval(qml.PauliZ(0))


def program(x):
    """Twelve QNode tasks, one after the other: never two QNodes starting at
    once, which Catalyst's own runtime does not always survive
    (docs/catalyst.md), so that only exit is tested here."""

    @for_loop(0, 12, 1)
    def body(i, acc):
        return acc + deep(x + i + acc)

    return body(0.0)


def runtime_library(lib):
    """The async runtime the compiled program is bound to, as loaded."""
    if lib:
        return ctypes.CDLL(str(Path(lib).resolve()))
    import catalyst

    return ctypes.CDLL(str(Path(catalyst.__file__).parent / "lib" / "libmlir_async_runtime.so.22.0git"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib")
    parser.add_argument("--case", choices=["return", "alive", "recompile", "thread"], required=True)
    args = parser.parse_args()
    if args.lib:
        mlir_async_rs.use(args.lib)
    compiled = qjit(program, async_qnodes=True)
    first = compiled(0.3)
    assert compiled(0.3) == first
    if args.case == "alive":
        runtime = runtime_library(args.lib)
        runtime.mlirAsyncRuntimeCreateToken.restype = ctypes.c_void_p
        runtime.mlirAsyncRuntimeCreateValue.restype = ctypes.c_void_p
        runtime.mlirAsyncRuntimeCreateValue.argtypes = [ctypes.c_int64]
        kept = [runtime.mlirAsyncRuntimeCreateToken(), runtime.mlirAsyncRuntimeCreateToken(),
                runtime.mlirAsyncRuntimeCreateValue(8)]
        assert all(kept)
    elif args.case == "recompile":
        import jax.numpy as jnp

        summed = qjit(lambda xs: program(jnp.sum(xs)), async_qnodes=True)
        two = summed(jnp.array([0.1, 0.2]))
        three = summed(jnp.array([0.1, 0.1, 0.1]))  # compiled again, the first dlclosed
        assert abs(float(two) - float(three)) < 1e-9, (two, three)  # both sum to 0.30000000000000004
        assert summed(jnp.array([0.1, 0.1, 0.1])) == three
    elif args.case == "thread":
        inside = threading.Event()

        def keep_calling():
            while True:
                inside.set()
                compiled(0.3)

        threading.Thread(target=keep_calling, daemon=True).start()
        inside.wait()
        time.sleep(0.3)
    print("exiting", flush=True)


if __name__ == "__main__":
    main()
