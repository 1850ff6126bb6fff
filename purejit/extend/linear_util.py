"""Wrapped functions, as `jax.extend.linear_util`: `wrap_init(f)` gives a `WrappedFun`
whose `call_wrapped(*args)` calls `f` through the wrappers added by `wrap` (what
`api_util.flatten_fun` adds), so a library can hand a function to partial evaluation."""

from __future__ import annotations

from typing import Callable


class Store:
    """A value a wrapper records when the function runs (e.g. the output tree), read after."""

    __slots__ = ("_val",)
    _EMPTY = object()

    def __init__(self):
        self._val = Store._EMPTY

    def store(self, val) -> None:
        self._val = val

    @property
    def val(self):
        if self._val is Store._EMPTY:
            raise ValueError("the wrapped function has not run yet: its result is not stored")
        return self._val

    def __call__(self):
        return self.val


class WrappedFun:
    """`f` with wrappers: `call_wrapped(*args, **kwargs)` runs the outermost wrapper, which
    receives the call of the next one inward."""

    def __init__(self, f: Callable, wrappers=(), params=None, debug_info=None):
        self.f, self.wrappers = f, tuple(wrappers)
        self.params, self.debug_info = dict(params or {}), debug_info

    @property
    def __name__(self):
        return getattr(self.f, "__name__", repr(self.f))

    def wrap(self, wrapper: Callable) -> "WrappedFun":
        """A new `WrappedFun` whose call is `wrapper(inner_call, *args, **kwargs)`."""
        return WrappedFun(self.f, (*self.wrappers, wrapper), self.params, self.debug_info)

    def call_wrapped(self, *args, **kwargs):
        call = lambda *a, **k: self.f(*a, **{**self.params, **k})  # noqa: E731
        for w in self.wrappers:
            call = (lambda w_, inner: lambda *a, **k: w_(inner, *a, **k))(w, call)
        return call(*args, **kwargs)

    def __repr__(self):
        return f"WrappedFun({self.__name__})"


def wrap_init(f: Callable, params=None, *, debug_info=None) -> WrappedFun:
    """`f` as a `WrappedFun` (`params`: keyword arguments every call passes)."""
    return WrappedFun(f, (), params, debug_info)


__all__ = ["Store", "WrappedFun", "wrap_init"]
