"""User-defined primitives: one generic op for every primitive a user or library defines
(`purejit.extend.core.Primitive`, JAX's `jax.extend.core.Primitive`).

user_primitive(args...) {primitive} [region(args...) {lowering -> results...}] -> results...
    Applies the primitive named by `primitive`, a key (`"<name>#<n>"`) of the process-wide
    table below, which holds the primitive and the parameters of this use. Its rules are the
    primitive's: the type rule calls its abstract evaluation, the reference rule its
    implementation, differentiation and batching its rule tables. The optional region is
    the primitive's lowering traced at the operands' types (a function of purejit ops); the
    emitter inlines it, and an op without one (a primitive with no lowering) fails to emit,
    naming the primitive.

user_primitive_effect(...)
    The same for a primitive declared with effects: passes never remove, merge, fold or
    reorder it (the `side_effect` trait); `user_primitive` is pure (removed when unused,
    merged by CSE).

Both carry the `approximate` trait: constant folding never runs a primitive's Python
implementation in place of its lowering, so a program computes the same numbers whether
its inputs are constants or arguments.

The table holds, per key, an object with `infer(types) -> result types` and
`reference(arrays) -> arrays` (and what the transformations ask for: `jvp`, `transpose`,
`batch`); `purejit.extend` fills it. IR text naming a key runs only in the process that
registered it, as with host callbacks. Entries are never dropped: programs kept in caches
name them by key (a use whose parameters do not hash gets a key of its own each time it is
bound, so such primitives grow the table with every trace).
"""

from __future__ import annotations

import itertools
import threading

from purejit.ir.registry import OpDef, fail, register

OPS = ("user_primitive", "user_primitive_effect")

_PRIMITIVES: dict[str, object] = {}
_INTERNED: dict = {}  # (primitive, parameters) -> key, for parameters that hash
_counter = itertools.count()
_lock = threading.Lock()


def register_use(name: str, entry, identity=None) -> str:
    """Keep `entry` (one primitive with its parameters) and return its key. With a hashable
    `identity` (the primitive and its parameters), the same identity gets the same key, so a
    program traced again is the same IR and hits the compile caches."""
    label = "".join(c if c.isalnum() or c in "_." else "_" for c in name)[:40]
    with _lock:
        if identity is not None and identity in _INTERNED:
            return _INTERNED[identity]
        key = f"{label}#{next(_counter)}"
        _PRIMITIVES[key] = entry
        if identity is not None:
            _INTERNED[identity] = key
    return key


def lookup_use(key: str):
    """The entry registered under `key`; KeyError naming the key if it is unknown."""
    try:
        return _PRIMITIVES[key]
    except KeyError:
        raise KeyError(
            f"user primitive {key!r} is not registered in this process (IR text that names a "
            "user primitive can only run where the primitive was bound)"
        ) from None


def _infer(op: str):
    def infer(types, attrs, regions):
        key = attrs.get("primitive")
        if not isinstance(key, str):
            fail(op, f"primitive must be the key of a bound primitive, got {key!r}")
        try:
            entry = lookup_use(key)
        except KeyError as e:
            fail(op, str(e.args[0]))
        outs = list(entry.infer(list(types)))
        if len(regions) > 1:
            fail(op, f"takes at most one region (its lowering), got {len(regions)}")
        if regions:
            (body,) = regions
            if list(body.param_types) != list(types):
                got = ", ".join(map(str, body.param_types))
                fail(op, f"{key}: the lowering takes ({got}), operands are "
                         f"({', '.join(map(str, types))})")  # fmt: skip
            if list(body.result_types) != outs:
                got = ", ".join(map(str, body.result_types))
                want = ", ".join(map(str, outs))
                fail(
                    op,
                    f"{key}: the lowering returns ({got}), the abstract evaluation says "
                    f"({want}); they must agree",
                )
        return outs

    return infer


def _reference(args, attrs, regions, run):
    return lookup_use(attrs["primitive"]).reference(list(args))


for _name, _traits, _doc in (
    ("user_primitive", {"pure", "approximate"}, "a user-defined primitive without effects"),
    ("user_primitive_effect", {"side_effect", "approximate"}, "a user-defined primitive "
     "with effects: never removed, merged or reordered"),
):  # fmt: skip
    register(
        OpDef(
            _name,
            _infer(_name),
            _reference,
            frozenset(_traits),
            attrs=("primitive",),
            num_regions=None,
            doc=f"{_name}(args...) {{primitive}} [region: lowering]: {_doc}",
        )
    )
