"""Python operators for tracers and purejit.Array, dispatching to purejit.numpy.

`purejit.numpy` installs them on both classes when it is imported (`install(cls, jnp)`), so
neither tracing nor the runtime depends on the NumPy API built above them.
"""

from __future__ import annotations


import numpy as np

from purejit.tracing import ConcreteArray

# what an operator takes as its other operand without asking it first (Tracer and Array join
# as `install` runs); lists and tuples reach purejit.numpy, which names why they are refused
_OPERANDS: tuple[type, ...] = (bool, int, float, complex, np.generic, np.ndarray, list, tuple)


def _defers(other, dunder: str) -> bool:
    """Whether `self <op> other` returns NotImplemented so that Python asks `other` (as JAX
    does for a type it does not recognise): `other` is none of purejit's operand types and
    its class defines the mirrored operator (Equinox's `ω` computes `x**ω` with `__rpow__`)."""
    if isinstance(other, _OPERANDS) or hasattr(other, "__jax_array__"):
        return False
    if type(other).__module__.partition(".")[0] in ("jax", "jaxlib"):
        return False  # a real jax.Array: purejit.numpy takes it
    return hasattr(type(other), dunder)


def _binary(jnp, fname, reflected=False, mirror=None):
    """The operator calling `jnp.<fname>`; a forward one (`mirror`: the reflected dunder)
    returns NotImplemented where `_defers` says so. A reflected one never defers: Python
    calls it only once the other operand's forward operator declined."""
    f = getattr(jnp, fname)
    if reflected:
        return lambda self, other: f(other, self)

    def forward(self, other):
        if mirror is not None and _defers(other, mirror):
            return NotImplemented
        return f(self, other)

    return forward


_BINARY = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "true_divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "power",
    "matmul": "matmul",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "left_shift",
    "rshift": "right_shift",
}
_COMPARE = {
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "eq": "equal",
    "ne": "not_equal",
}


def install(cls, jnp):
    """Give `cls` (Tracer, Array) Python's operators and NumPy's methods, from `jnp`."""
    global _OPERANDS
    # first: the common operand is checked first; Array joins as ConcreteArray, since
    # isinstance(x, Array) also holds for typed keys, which keep their own operators
    _OPERANDS = (ConcreteArray if issubclass(cls, ConcreteArray) else cls, *_OPERANDS)
    for dunder, fname in _BINARY.items():
        setattr(cls, f"__{dunder}__", _binary(jnp, fname, mirror=f"__r{dunder}__"))
        setattr(cls, f"__r{dunder}__", _binary(jnp, fname, reflected=True))
    for dunder, fname in _COMPARE.items():
        setattr(cls, f"__{dunder}__", _binary(jnp, fname))
    cls.__neg__ = lambda self: jnp.negative(self)
    cls.__pos__ = lambda self: self
    cls.__abs__ = lambda self: jnp.abs(self)
    cls.__invert__ = lambda self: jnp.invert(self)
    cls.__divmod__ = lambda self, o: (jnp.floor_divide(self, o), jnp.remainder(self, o))
    cls.__getitem__ = lambda self, idx: jnp._indexing_getitem(self, idx)
    cls.__iter__ = _iter
    cls.T = property(lambda self: jnp.transpose(self))
    cls.mT = property(lambda self: jnp.swapaxes(self, -1, -2))
    cls.at = property(lambda self: jnp._IndexUpdateHelper(self))
    for name in (
        "reshape", "transpose", "astype", "sum", "mean", "max", "min", "prod", "var", "std",
        "argmax", "argmin", "any", "all", "squeeze", "ravel", "flatten", "swapaxes", "clip",
        "round", "cumsum", "dot", "conj", "sort", "argsort", "take", "repeat", "nonzero",
        "cumprod", "diagonal", "searchsorted", "argpartition", "choose", "conjugate",
        "ptp",
    ):  # fmt: skip
        setattr(cls, name, _method(jnp, name))
    if not hasattr(cls, "trace"):  # a tracer's `trace` is its trace
        cls.trace = _method(jnp, "trace")
    # x.compress(condition) is jnp.compress(condition, x)
    cls.compress = lambda self, condition, *a, **k: jnp.compress(condition, self, *a, **k)
    cls.__round__ = lambda self, ndigits=None: jnp.round(self, ndigits or 0)
    cls.itemsize = property(lambda self: self.dtype.itemsize)
    cls.nbytes = property(lambda self: self.size * self.dtype.itemsize)
    cls.__array_namespace__ = _array_namespace(jnp)
    cls.copy = lambda self: jnp.copy(self)
    if "__setitem__" not in vars(cls):
        cls.__setitem__ = _setitem
    cls.real = property(lambda self: jnp.real(self))
    cls.imag = property(lambda self: jnp.imag(self))


def _method(jnp, name):
    def method(self, *args, **kwargs):
        fname = {"flatten": "ravel"}.get(name, name)
        if name in ("reshape", "transpose") and len(args) > 1:
            args = (args,)
        return getattr(jnp, fname)(self, *args, **kwargs)

    method.__name__ = name
    return method


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))


def _array_namespace(jnp):
    def __array_namespace__(self, /, *, api_version=None):
        """The Array API namespace of this array: purejit.numpy."""
        if api_version is not None and api_version != jnp.__array_api_version__:
            raise ValueError(
                f"api_version={api_version!r} is not available; purejit.numpy implements "
                f"{jnp.__array_api_version__!r}"
            )
        return jnp

    return __array_namespace__


def _setitem(self, index, value):
    raise TypeError(
        "purejit arrays are immutable and do not support in-place item assignment; "
        "instead of x[idx] = y, use x = x.at[idx].set(y)"
    )
