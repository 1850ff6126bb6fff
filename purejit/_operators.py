"""Python operators for tracers and purejit.Array, dispatching to purejit.numpy."""

from __future__ import annotations


def _np():
    import purejit.numpy as jnp

    return jnp


def _binary(fname, reflected=False):
    if reflected:
        return lambda self, other: getattr(_np(), fname)(other, self)
    return lambda self, other: getattr(_np(), fname)(self, other)


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


def install(cls):
    for dunder, fname in _BINARY.items():
        setattr(cls, f"__{dunder}__", _binary(fname))
        setattr(cls, f"__r{dunder}__", _binary(fname, reflected=True))
    for dunder, fname in _COMPARE.items():
        setattr(cls, f"__{dunder}__", _binary(fname))
    cls.__neg__ = lambda self: _np().negative(self)
    cls.__pos__ = lambda self: self
    cls.__abs__ = lambda self: _np().abs(self)
    cls.__invert__ = lambda self: _np().invert(self)
    cls.__divmod__ = lambda self, o: (_np().floor_divide(self, o), _np().remainder(self, o))
    cls.__getitem__ = lambda self, idx: _np()._indexing_getitem(self, idx)
    cls.__iter__ = _iter
    cls.T = property(lambda self: _np().transpose(self))
    cls.mT = property(lambda self: _np().swapaxes(self, -1, -2))
    cls.at = property(lambda self: _np()._IndexUpdateHelper(self))
    for name in (
        "reshape", "transpose", "astype", "sum", "mean", "max", "min", "prod", "var", "std",
        "argmax", "argmin", "any", "all", "squeeze", "ravel", "flatten", "swapaxes", "clip",
        "round", "cumsum", "dot", "conj", "sort", "argsort",
    ):  # fmt: skip
        setattr(cls, name, _method(name))
    cls.real = property(lambda self: _np().real(self))
    cls.imag = property(lambda self: _np().imag(self))


def _method(name):
    def method(self, *args, **kwargs):
        fname = {"flatten": "ravel"}.get(name, name)
        if name in ("reshape", "transpose") and len(args) > 1:
            args = (args,)
        return getattr(_np(), fname)(self, *args, **kwargs)

    method.__name__ = name
    return method


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))
