"""PRNG keys: typed key arrays (`key<fry>`) and raw `uint32[..., 2]` key data.

A typed key is a `PRNGKeyArray`: a pytree node whose single leaf is its key data, so keys go
through `jit` arguments and results, `scan` carries and any pytree without special cases;
its shape is the data's shape without the trailing 2. Arithmetic on it is an error, as in
JAX. Raw keys (`PRNGKey`) are plain uint32 arrays; every sampler accepts both.
"""

from __future__ import annotations

import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit import lax
from purejit.runtime import Array
from purejit.runtime.array import array_value_type
from purejit.tracing import ConcreteArray, Tracer
from purejit.tree_util import register_pytree_node

IMPL = "threefry2x32"
_KNOWN_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32", "threefry4x32")


class KeyDType:
    """The dtype of typed keys, `key<fry>` for threefry2x32."""

    name = "key<fry>"
    impl = IMPL
    itemsize = 8

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyDType) or other in ("key<fry>", IMPL)

    def __hash__(self) -> int:
        return hash(self.name)


KEY_DTYPE = KeyDType()


def _loc() -> str:
    return errors.at(errors.user_location())


def _no_arithmetic(name):
    def method(self, *args, **kwargs):
        raise TypeError(
            f"{name} is not defined on typed PRNG keys ({self.dtype}){_loc()}: keys are not "
            "numbers; make new keys with purejit.random.split / fold_in, or use "
            "purejit.random.key_data(key) for the raw uint32 data"
        )

    method.__name__ = name
    return method


@array_value_type  # isinstance(key, purejit.Array) holds, as for jax.Array
class PRNGKeyArray:
    """An array of PRNG keys of dtype `key<fry>`, backed by uint32 data of shape
    `(*shape, 2)`. Indexing, `reshape`, `len` and iteration act on the key dimensions."""

    __slots__ = ("_data",)
    __array_priority__ = 2000

    def __init__(self, data):
        self._data = data

    # --- array-like metadata --------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape[:-1])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> KeyDType:
        return KEY_DTYPE

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"len() of a scalar key array{_loc()}")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError(f"iteration over a scalar key array{_loc()}")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        if any(i is Ellipsis for i in idx):
            raise NotImplementedError(f"indexing a key array with ...{_loc()}")
        return PRNGKeyArray(self._data[(*idx, slice(None))])

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        n = self.size
        shape = tuple(operator.index(d) for d in shape)
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            shape = tuple(n // max(known, 1) if d == -1 else d for d in shape)
        return PRNGKeyArray(lax.reshape(self._data, (*shape, 2)))

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    def copy(self):
        """The keys again (arrays are immutable: the same data)."""
        return PRNGKeyArray(self._data)

    def block_until_ready(self):
        if hasattr(self._data, "block_until_ready"):
            self._data.block_until_ready()
        return self

    def __repr__(self) -> str:
        if isinstance(self._data, Tracer):
            return f"PRNGKeyArray(shape={self.shape}, dtype={self.dtype}, traced)"
        data = np.asarray(self._data)
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{data}"

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            f"a typed PRNG key ({self.dtype}) cannot be converted to a NumPy array{_loc()}; "
            "use np.asarray(purejit.random.key_data(key)) for its uint32 data"
        )

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        same = lax.eq(self._data, other._data)
        return lax.reduce(same, True, lax.bitwise_and, (same.ndim - 1,))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else lax.bitwise_not(eq)

    __hash__ = None

    def __bool__(self):
        raise TypeError(f"the truth value of a PRNG key is not defined{_loc()}")


for _name in (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ "
    "__floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __matmul__ __rmatmul__ "
    "__and__ __rand__ __or__ __ror__ __xor__ __rxor__ __lshift__ __rlshift__ __rshift__ "
    "__rrshift__ __neg__ __pos__ __abs__ __invert__ __lt__ __le__ __gt__ __ge__ "
    "astype __float__ __int__ __index__"
).split():
    setattr(PRNGKeyArray, _name, _no_arithmetic(_name.strip("_")))


register_pytree_node(PRNGKeyArray, lambda k: ([k._data], IMPL), lambda _, c: PRNGKeyArray(c[0]))


# ---- checks ----------------------------------------------------------------------------------


def _is_arraylike(x) -> bool:
    return isinstance(x, (ConcreteArray, Tracer, np.ndarray)) or (
        hasattr(x, "__array__") and hasattr(x, "shape") and hasattr(x, "dtype")
    )


def _describe(x) -> str:
    dt = getattr(x, "dtype", type(x).__name__)
    return f"{np.dtype(dt).name if not isinstance(dt, str) else dt}{list(np.shape(x))}"


def check_key_data(name: str, data, arg: str = "key"):
    """Raw key data `data` as a purejit array, or a TypeError naming `name` and `arg`."""
    if not _is_arraylike(data):
        raise TypeError(
            f"{name}: unexpected PRNG key type {type(data).__name__} for argument '{arg}'"
            f"{_loc()}; pass a key from purejit.random.key(seed) or PRNGKey(seed)"
        )
    shape, dt = tuple(np.shape(data)), np.dtype(data.dtype)
    if len(shape) < 1 or shape[-1] != 2 or dt != np.uint32:
        what = "a float array" if dt.kind in "fc" else _describe(data)
        raise TypeError(
            f"{name}: argument '{arg}' is {what} ({_describe(data)}), not a PRNG key{_loc()}: "
            "a key is a typed key from purejit.random.key(seed) or uint32 key data of shape "
            "(..., 2) from purejit.random.PRNGKey(seed)"
        )
    return data if isinstance(data, (ConcreteArray, Tracer)) else Array(host=np.asarray(data))


def check_key(name: str, key, *, allow_batched: bool = False, arg: str = "key"):
    """`(key data, typed)` for a typed or raw key; errors name the function and argument."""
    if isinstance(key, PRNGKeyArray):
        data, typed = key._data, True
    else:
        data, typed = check_key_data(name, key, arg), False
    if not allow_batched and data.ndim != 1:
        raise ValueError(
            f"{name} accepts a single key, but was given a key array of shape "
            f"{tuple(data.shape[:-1])} != (){_loc()}. Use vmap or a Python loop for batching."
        )
    return data, typed


def resolve_impl(name: str, impl):
    if impl is None or impl == IMPL or isinstance(impl, KeyDType):
        return IMPL
    if isinstance(impl, str) and impl in _KNOWN_IMPLS:
        raise NotImplementedError(
            f"{name}: PRNG implementation {impl!r} is not in purejit; only 'threefry2x32' "
            "(JAX's default) is implemented"
        )
    raise ValueError(f"{name}: unrecognized PRNG implementation {impl!r}; use 'threefry2x32'")


# ---- constructors and views ----------------------------------------------------------------


def seed_array(name: str, seed):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key{_loc()}")
    if np.ndim(seed) if not isinstance(seed, Tracer) else seed.ndim:
        raise TypeError(
            f"{name} accepts a scalar seed, but was given an array of shape "
            f"{tuple(np.shape(seed))} != (){_loc()}. Use vmap or a loop for batching"
        )
    if isinstance(seed, (ConcreteArray, Tracer)):
        s = seed
    elif isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        dt = np.asarray(seed).dtype
        if dt.kind not in "iu":
            raise TypeError(f"{name}: PRNG key seed must be an integer; got {seed!r}{_loc()}")
        s = Array(host=np.asarray(seed, pdt.canonicalize(dt)))
    else:
        # a Python int: int64, wrapped to int32 without x64 (JAX's rule, hash seeds work)
        s = Array(host=np.asarray(np.int64(seed)).astype(pdt.canonicalize(np.dtype(np.int64))))
    if s.dtype.kind not in "iu":
        raise TypeError(f"{name}: PRNG key seed must be an integer; got {_describe(s)}{_loc()}")
    return s
