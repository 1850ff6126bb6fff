"""First-order optimizers with the API of `jax.example_libraries.optimizers`, plus `adamw`.

An optimizer is a triple `(init_fun, update_fun, get_params)`:

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    state = opt_init(params)
    state = opt_update(step, grads, state)   # inside a jitted step, grads from purejit.grad
    params = get_params(state)

Each optimizer is written for one array; `optimizer` lifts it to pytrees of parameters. The
update equations and defaults are JAX's (the tests compare the trajectories over hundreds of
steps), so a script moves between the two libraries by changing its imports. optax cannot run
on purejit's tracers (it calls `jax.numpy` inside); these optimizers cover what the example
libraries cover, and `adamw` adds decoupled weight decay with optax's defaults.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

import numpy as np

import purejit.numpy as jnp
from purejit.tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]),
)

Schedule = Callable[[Any], Any]


class Optimizer(NamedTuple):
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


class JoinPoint:
    """Marks where a per-parameter state subtree sits in an unpacked optimizer state."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def optimizer(opt_maker: Callable) -> Callable[..., Optimizer]:
    """Lift an optimizer written for one array to one for pytrees of parameters.

    Args:
        opt_maker: returns `(init, update, get_params)` acting on a single array's state.
    Returns:
        a function with `opt_maker`'s arguments returning an `Optimizer` over pytrees.
    """

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            flat = [tree_flatten(init(x0)) for x0 in x0_flat]
            return OptimizerState([s for s, _ in flat], tree, tuple(t for _, t in flat))

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_def = tree_flatten(grad_tree)
            if grad_def != tree:
                raise TypeError(
                    "optimizer update: the gradient tree does not match the parameter tree "
                    f"the optimizer was initialised with: parameters {tree}, gradients "
                    f"{grad_def}. Pass grads with the structure of the params."
                )
            new_flat, new_subtrees = [], []
            for g, sub, leaves in zip(grad_flat, subtrees, states_flat):
                new_state = update(i, g, tree_unflatten(sub, leaves))
                leaves2, sub2 = tree_flatten(new_state)
                if sub2 != sub:
                    raise TypeError(
                        "optimizer update produced a state whose structure differs from its "
                        f"input: input {sub}, output {sub2}"
                    )
                new_flat.append(leaves2)
                new_subtrees.append(sub2)
            return OptimizerState(new_flat, tree, tuple(new_subtrees))

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            params = [get_params(tree_unflatten(d, s)) for d, s in zip(subtrees, states_flat)]
            return tree_unflatten(tree, params)

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# ---- optimizers (one array each; `optimizer` lifts them to pytrees) ----------------------


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: `x <- x - lr(i) * g`."""
    lr = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - lr(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass: float):
    """Heavy-ball momentum: `v <- mass * v + g; x <- x - lr(i) * v`."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - lr(i) * v, v

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov momentum: `v <- mass * v + g; x <- x - lr(i) * (mass * v + g)`."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - lr(i) * (mass * v + g), v

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum on the normalised gradient."""
    lr = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        return x - lr(i) * m, g_sq, m

    return init, update, (lambda s: s[0])


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: divide by a running root mean square of the gradients."""
    lr = make_schedule(step_size)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        return x - lr(i) * g / jnp.sqrt(avg + eps), avg

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the scaled step."""
    lr = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + lr(i) * g / jnp.sqrt(avg + eps)
        return x - mom, avg, mom

    return init, update, (lambda s: s[0])


def _adam_moments(i, g, m, v, b1, b2):
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    return m, v, mhat, vhat


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015) with bias-corrected moments."""
    lr = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m, v, mhat, vhat = _adam_moments(i, g, m, v, b1, b2)
        return x - lr(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    return init, update, (lambda s: s[0])


@optimizer
def adamw(step_size, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4):
    """Adam with decoupled weight decay (Loshchilov and Hutter, 2019), optax's defaults:
    `x <- x - lr(i) * (mhat / (sqrt(vhat) + eps) + weight_decay * x)`."""
    lr = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m, v, mhat, vhat = _adam_moments(i, g, m, v, b1, b2)
        return x - lr(i) * (mhat / (jnp.sqrt(vhat) + eps) + weight_decay * x), m, v

    return init, update, (lambda s: s[0])


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm of past gradients."""
    lr = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (lr(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, (lambda s: s[0])


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., 2019): one accumulator per axis instead of per element."""
    lr = make_schedule(step_size)

    def along(ndim, v, axis):
        idx = [None] * ndim
        idx[axis] = slice(None)
        return v[tuple(idx)]

    def init(x0):
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, jnp.zeros_like(x0), vs, shape

    def update(i, g, state):
        x, m, vs, shape = state
        vs = [along(g.ndim, v, a) for a, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        inv = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        x = x - lr(i) * m
        vs = [accum.max(tuple(a for a in range(x.ndim) if a != j)) for j in range(x.ndim)]
        return x, m, vs, shape

    return init, update, (lambda s: s[0].reshape(s[3]))


# ---- learning-rate schedules ---------------------------------------------------------------


def constant(step_size) -> Schedule:
    """The same step size at every step."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """`step_size * decay_rate ** (i / decay_steps)`."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    """`step_size / (1 + decay_rate * i / decay_steps)` (floored ratio with `staircase`)."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    """From `step_size` to `final_step_size` over `decay_steps` along `(1 - t) ** power`."""

    def schedule(i):
        i = jnp.minimum(i, decay_steps)
        return (1 - i / decay_steps) ** power * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """`values[k]` for steps in `(boundaries[k-1], boundaries[k]]`."""
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("piecewise_constant: boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError(
            "piecewise_constant: boundaries must be one shorter than values, got "
            f"{boundaries.shape[0]} boundaries and {values.shape[0]} values"
        )
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    """A schedule from a callable (kept) or a scalar (constant)."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(
        f"a step size must be a scalar or a schedule (a function of the step), got "
        f"{type(scalar_or_schedule).__name__} of shape {np.shape(scalar_or_schedule)}"
    )


# ---- utilities -----------------------------------------------------------------------------


def l2_norm(tree):
    """The l2 norm of all leaves of `tree` taken together."""
    leaves, _ = tree_flatten(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Scale `grad_tree` so that its l2 norm is at most `max_norm`."""
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


def unpack_optimizer_state(opt_state):
    """The optimizer state as a pytree of `JoinPoint`s shaped like the parameters (for
    saving); `pack_optimizer_state` inverts it."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [tree_unflatten(d, s) for d, s in zip(subtree_defs, states_flat)]
    return tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """Inverse of `unpack_optimizer_state`."""
    sentinels, tree_def = tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state: expected a pytree of JoinPoint leaves")
    flat = [tree_flatten(s.subtree) for s in sentinels]
    return OptimizerState([f for f, _ in flat], tree_def, tuple(d for _, d in flat))
