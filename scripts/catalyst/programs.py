"""The hybrid programs of make catalyst (docs/catalyst.md): each is a
function of one float that qjit compiles with async_qnodes=True, so that
every QNode call in it becomes an async task. All run on lightning.qubit
with analytic results (no shots), so that two runs give bit-identical
results whatever the task order.

Left out, for what Catalyst itself does with async QNodes (Catalyst 0.15):
- the gradient of a QNode that returns the expectation of a Hamiltonian
  (a sum of observables, `energy` below): Catalyst's compiler fails in
  Enzyme ("Cannot deduce type of copy") with async_qnodes=True, and
  compiles it without; `gradients` differentiates a tensor-product
  observable instead, and calls `energy` without a gradient;
- anything that samples (qml.sample, qml.counts, mcm_method="one-shot"):
  with async QNodes Catalyst refuses a seed (CompileError "Seeding has no
  effect on asynchronous QNodes"), so no two runs can be compared exactly.
"""

import jax.numpy as jnp
import pennylane as qml
from catalyst import cond, for_loop, grad, while_loop

WIRES = 6
_dev = qml.device("lightning.qubit", wires=WIRES)


def _entangle(x, y):
    for w in range(WIRES):
        qml.RX(x * (w + 1), wires=w)
        qml.RY(y - w, wires=w)
    for w in range(WIRES - 1):
        qml.CNOT(wires=[w, w + 1])
    for w in range(WIRES):
        qml.RZ(x * y + w, wires=w)


@qml.qnode(_dev)
def expval_zz(x, y):
    _entangle(x, y)
    _entangle(y, x)
    return qml.expval(qml.PauliZ(0) @ qml.PauliZ(WIRES - 1))


@qml.qnode(_dev)
def probabilities(x):
    _entangle(x, 0.5)
    return qml.probs(wires=[0, 1, 2])


@qml.qnode(_dev, diff_method="adjoint")
def energy(x):
    _entangle(x, x)
    return qml.expval(qml.PauliX(1) @ qml.PauliY(2) + 0.5 * qml.PauliZ(3))


def several(x):
    """Eight independent QNodes per call, combined at the end."""
    parts = [expval_zz(x + k, 0.3 * k) for k in range(6)]
    p = probabilities(x)
    return jnp.stack(parts), p * energy(x)


def in_for_loop(x):
    """A for_loop of 10 iterations, two QNodes each: one depends on the
    loop's carried value, the other does not."""

    @for_loop(0, 10, 1)
    def body(i, acc):
        return acc + expval_zz(x * i, acc) * probabilities(x + i)[i % 8]

    return body(0.0)


def nested_loops(x):
    """for_loop in for_loop: 4 x 3 iterations, two QNodes each."""

    @for_loop(0, 4, 1)
    def outer(i, acc):
        @for_loop(0, 3, 1)
        def inner(j, a):
            return a + expval_zz(x * i, 0.1 * j) * probabilities(a)[j]

        return inner(acc) + energy(acc)

    return outer(0.0)


def while_and_cond(x):
    """A while_loop whose condition depends on QNode results, with a cond
    that picks one of two QNodes at each step."""

    @while_loop(lambda n, a: jnp.logical_and(n < 12, a < 4.0))
    def loop(n, a):
        @cond(a > 0.2)
        def step():
            return expval_zz(a, x)

        @step.otherwise
        def step():
            return energy(x + n)

        return n + 1, a + jnp.abs(step()) + 0.05

    return loop(0, 0.0)


def gradients(x):
    """Gradients of QNodes (adjoint method) beside plain QNode calls."""
    g = grad(lambda y: expval_zz(y, 0.4))(x)
    h = grad(lambda y: expval_zz(0.2, y))(x)
    return g, h, expval_zz(x, x), energy(2 * x)


# name -> (function, argument, calls per timed run). `several` gets fewer
# calls: with the wheel's runtime, about one call in a hundred of it hits
# Catalyst's device-pool race (docs/catalyst.md) and ends the process.
PROGRAMS = {
    "several": (several, 0.7, 20),
    "in-for-loop": (in_for_loop, 0.3, 60),
    "nested-loops": (nested_loops, 0.5, 60),
    "while-and-cond": (while_and_cond, 0.9, 60),
    "gradients": (gradients, 0.4, 60),
}
