"""The IR's data structures: tensor types, SSA values, ops and functions.

A `Function` is a list of ops in A-normal form: every operand is a `Value` defined by a
parameter or by an earlier op. Ops with nested computations (`reduce`, `case`, `while`,
`fusion`, ...) hold them as `regions`, which are themselves closed `Function`s: a region only
sees its own parameters, so captured values are explicit operands of the op.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from purejit.ir import dtypes
from purejit.ir.printer import print_function
from purejit.ir.registry import get_op
from purejit.ir.traits import TRAITS, unknown_traits_message


_SHAPES: dict[tuple, tuple] = {}  # checked shapes, each its own canonical object


@dataclass(frozen=True)
class TensorType:
    """A static shape and an element type, e.g. `f32[3,4]`; `f32[]` is a scalar."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def __post_init__(self):
        shape, dt = self.shape, self.dtype
        seen = _SHAPES.get(shape) if type(shape) is tuple else None
        if seen is not None:  # equal to a checked shape: take that tuple of Python ints
            if seen is not shape:
                object.__setattr__(self, "shape", seen)
        else:
            shape = tuple(int(d) for d in shape)
            if any(d < 0 for d in shape):
                raise ValueError(f"negative dimension in shape {shape}")
            if len(_SHAPES) < 65536:
                _SHAPES[shape] = shape
            object.__setattr__(self, "shape", shape)
        if type(dt) is not np.dtype or dt not in dtypes.ALL_DTYPES_SET:
            object.__setattr__(self, "dtype", dtypes.canonical(dt))

    def __eq__(self, other):  # the dataclass's, the common case first
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.shape == other.shape and self.dtype == other.dtype

    def __reduce__(self):  # the fields only: what is kept below is remade in each process
        return TensorType, (self.shape, self.dtype)

    def __hash__(self):  # the dataclass's (of the fields), kept on the type
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.shape, self.dtype))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __str__(self) -> str:
        text = self.__dict__.get("_text")  # kept: a type is printed once per value
        if text is None:
            text = f"{dtypes.dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"
            object.__setattr__(self, "_text", text)
        return text

    __repr__ = __str__


_ids = itertools.count()
_new_op = object.__new__


class Value:
    """An SSA value. Identity is the object; `id` only orders values for printing."""

    __slots__ = ("type", "id")

    def __init__(self, type: TensorType):
        self.type = type
        self.id = next(_ids)

    def __repr__(self) -> str:
        return f"Value#{self.id}:{self.type}"


class Op:
    """One operation: `results = name(operands) {attrs} regions`."""

    # _verified: what `verify` checked of this op (ir/verifier.py); _effect: whether an op
    # with regions has an effect (passes/base.py's `has_effect`); each lives and dies with it
    __slots__ = ("name", "operands", "attrs", "results", "regions", "loc", "_verified", "_effect")

    def __init__(
        self,
        name: str,
        operands: Sequence[Value],
        attrs: dict[str, Any],
        results: Sequence[Value],
        regions: Sequence["Function"] = (),
        loc: str | None = None,
    ):
        self.name = name
        self.operands = list(operands)
        self.attrs = dict(attrs)
        self.results = list(results)
        self.regions = list(regions)
        self.loc = loc

    @classmethod
    def inferred(
        cls,
        name: str,
        operands: Sequence[Value],
        attrs: dict[str, Any],
        regions: Sequence["Function"] = (),
        loc: str | None = None,
    ) -> "Op":
        """An op of `name` whose results are fresh values of the types its rule infers."""
        types = get_op(name).infer([v.type for v in operands], attrs, list(regions))
        return cls(name, operands, attrs, [Value(t) for t in types], regions, loc)

    def rebuilt(self, operands: Sequence[Value], regions: Sequence["Function"]) -> "Op":
        """This op with new operands and regions; `self` when nothing changed, so that
        facts known about an unchanged op (e.g. that it verified) carry over."""
        if (
            len(operands) == len(self.operands)
            and all(map(operator.is_, operands, self.operands))
            and all(map(operator.is_, regions, self.regions))
        ):
            return self
        return Op(self.name, operands, self.attrs, self.results, regions, self.loc)

    @property
    def opdef(self):
        return get_op(self.name)

    def has_trait(self, trait: str) -> bool:
        """Whether this op's definition promises `trait` (one of `purejit.ir.traits`)."""
        if trait in get_op(self.name).traits:  # (registered traits are all known ones)
            return True
        if trait not in TRAITS:
            raise ValueError(unknown_traits_message(f"has_trait on op {self.name!r}", [trait]))
        return False

    @property
    def is_elementwise(self) -> bool:
        return self.has_trait("elementwise")

    def __repr__(self) -> str:
        return f"Op({self.name}, {len(self.operands)} operands, {self.attrs})"


class CopyClass:
    """The functions copied from one function (`Function.copy`), and that function: compared
    by identity (an unpickled or deep-copied function starts a class of its own, so no two
    processes' functions can share one by accident). It keeps how to copy them (`recipe`):
    every member has the same ops, attributes and types, so one recipe makes a copy of any."""

    __slots__ = ("recipe", "bucket")

    def __init__(self):
        self.recipe = None
        self.bucket = None  # `passes._isomorphism.bucket_key` of the members

    def __reduce__(self):
        return CopyClass, ()


def _recipe(fn: "Function") -> tuple:
    """`fn` as (the types of its values in definition order, parameters first; per op its
    name, attributes, location, operand indices, result index range and regions; the result
    indices): a copy is then one list of fresh values and list indexing, no lookups."""
    index: dict[Value, int] = {}
    types = []
    for p in fn.params:
        index[p] = len(types)
        types.append(p.type)
    ops = []
    for op in fn.ops:
        operands = [index[v] for v in op.operands]
        lo = len(types)
        for r in op.results:
            index[r] = len(types)
            types.append(r.type)
        ops.append((op.name, op.attrs, op.loc, operands, lo, len(types), op.regions))
    return types, len(fn.params), ops, [index[v] for v in fn.results]


class Function:
    """A closed function: parameters, a list of ops, and returned values.

    `copy_class` is None, or the `CopyClass` that this function shares only with the
    functions copied from it or from a function it was copied from (`copy`): those are
    isomorphic, constants included, by construction, and `passes._isomorphism.compare`
    reads the class instead of proving it op by op again (the IR is never changed in place:
    passes, transformations and tracing make new functions).
    """

    __slots__ = ("name", "params", "ops", "results", "copy_class")

    def __init__(
        self,
        name: str,
        params: Sequence[Value],
        ops: Sequence[Op],
        results: Sequence[Value],
    ):
        self.name = name
        self.params = list(params)
        self.ops = list(ops)
        self.results = list(results)
        self.copy_class: CopyClass | None = None

    @property
    def param_types(self) -> list[TensorType]:
        return [p.type for p in self.params]

    @property
    def result_types(self) -> list[TensorType]:
        return [r.type for r in self.results]

    def walk(self):
        """Yield every op, nested regions included (pre-order)."""
        for op in self.ops:
            yield op
            for region in op.regions:
                yield from region.walk()

    def op_count(self) -> int:
        return sum(1 for _ in self.walk())

    def copy(self) -> "Function":
        """The same function with fresh values and copied regions: equal in every op,
        attribute and type, sharing no value or region with `self` (a function is closed,
        so every operand is a parameter or an earlier op's result). The copy is in
        `self`'s copy class (a new one when `self` had none)."""
        cls = self.copy_class
        if cls is None:
            cls = self.copy_class = CopyClass()
        if cls.recipe is None:
            cls.recipe = _recipe(self)
        types, n_params, recipe, results = cls.recipe
        values = list(map(Value, types))
        ops = []
        for name, attrs, loc, operands, lo, hi, regions in recipe:
            made = _new_op(Op)  # what `Op(...)` makes, without its conversions of the lists
            made.name, made.attrs, made.loc = name, dict(attrs), loc
            made.operands = [values[i] for i in operands]
            made.results = values[lo:hi]
            made.regions = [r.copy() for r in regions] if regions else []
            ops.append(made)
        made = Function(self.name, values[:n_params], ops, [values[i] for i in results])
        made.copy_class = cls
        return made

    def __str__(self) -> str:
        return print_function(self)

    __repr__ = __str__


class Builder:
    """Builds a `Function` op by op, inferring result types from the registry.

    Example:
        b = Builder("f")
        x = b.param(TensorType((3,), np.float32))
        (y,) = b.op("add", [x, x])
        fn = b.finish([y])
    """

    def __init__(self, name: str = "main"):
        self.name = name
        self.params: list[Value] = []
        self.ops: list[Op] = []

    def param(self, type: TensorType) -> Value:
        v = Value(type)
        self.params.append(v)
        return v

    def op(
        self,
        name: str,
        operands: Sequence[Value] = (),
        attrs: dict[str, Any] | None = None,
        regions: Sequence[Function] = (),
        loc: str | None = None,
    ) -> list[Value]:
        op = Op.inferred(name, operands, dict(attrs or {}), regions, loc)
        self.ops.append(op)
        return op.results

    def finish(self, results: Sequence[Value]) -> Function:
        return Function(self.name, self.params, self.ops, results)
