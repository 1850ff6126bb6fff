"""Lowers a purejit IR function to a StableHLO module (MLIR text, generic op form).

This module is the emitter core: `EmitContext` hands out SSA names, emits ops and nested
regions, and `emit` writes the module with its `@main` function. The lowering rule of each
op lives in `lowering/<family>.py`, mirroring `ir/ops/<family>.py`; importing this module
registers them all. Text generation is used instead of the builder API because it is ~10x
cheaper; `verify_module` parses the text with jaxlib's MLIR bindings to check it.
"""

from __future__ import annotations

import unicodedata

from purejit.backend import lowering as _families  # noqa: F401 - registers every rule
from purejit.backend import mlir_context
from purejit.backend.lowering.callback import callback_keys
from purejit.backend.lowering._util import (  # noqa: F401 - the emitter's public names
    LOWERINGS,
    LowerFn,
    dense,
    emit_op,
    i64_array,
    lowering,
    mlir_type,
)
from purejit.ir import Function, TensorType


def _terminator(name: str, outs: list[str], types: str) -> str:
    if name == "sdy.return":  # Shardy's custom form, as sdy.manual_computation prints it
        return f"sdy.return {', '.join(outs)} : {types}"
    return f'"{name}"({", ".join(outs)}) : ({types}) -> ()'


class EmitContext:
    """Accumulates MLIR lines; hands out SSA names."""

    def __init__(self):
        self.lines: list[str] = []
        self.counter = 0
        self.indent = "    "
        self.module_ops: dict[str, str] = {}  # module-level ops by symbol (e.g. sdy.mesh)

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def op(
        self,
        name: str,
        operands: list[str],
        operand_types: list[TensorType],
        result_types: list[TensorType],
        attrs: str = "",
        regions: list[str] = (),
    ) -> list[str]:
        """Emit one generic-form op and return its result names."""
        res = self.fresh()
        n = len(result_types)
        head = f"{res}:{n} = " if n > 1 else (f"{res} = " if n == 1 else "")
        region_text = f" ({', '.join(regions)})" if regions else ""
        attr_text = f" {{{attrs}}}" if attrs else ""
        ins = ", ".join(mlir_type(t) for t in operand_types)
        outs = ", ".join(mlir_type(t) for t in result_types)
        outs = f"({outs})" if n != 1 else outs
        self.lines.append(
            f'{self.indent}{head}"{name}"({", ".join(operands)}){region_text}{attr_text}'
            f" : ({ins}) -> {outs}"
        )
        if n > 1:
            return [f"{res}#{i}" for i in range(n)]
        return [res] if n == 1 else []

    def inline(self, fn: Function, args: list[str]) -> list[str]:
        """Emit the ops of `fn` into the current block, its parameters bound to the values
        named `args`; returns the names of its results."""
        names = dict(zip(fn.params, args))
        for op in fn.ops:
            rule = LOWERINGS.get(op.name)
            if rule is None:
                raise NotImplementedError(f"no StableHLO lowering for op {op.name!r}")
            names.update(zip(op.results, rule(self, op, [names[v] for v in op.operands])))
        return [names[v] for v in fn.results]

    def body(
        self,
        fn: Function,
        *,
        block_args: int | None = None,
        outer: list[str] = (),
        arg_names: list[str] | None = None,
        terminator: str = "stablehlo.return",
        indent: str | None = None,
    ) -> tuple[list[str], list[str]]:
        """Emit `fn` as the body of a region or function: the one way a nested body is made.

        Args:
            fn: the IR function (an op's region, or the whole program).
            block_args: how many leading parameters become block arguments (all by
                default); the rest read values of the enclosing scope.
            outer: the names of those enclosing values, one per remaining parameter.
            arg_names: names for the block arguments (fresh `%vN` names by default).
            terminator: the op that returns the results (`stablehlo.return`,
                `func.return`, `sdy.return`).
            indent: the body's indentation (one step deeper than the current by default).
        Returns:
            (block argument declarations `%v1: tensor<...>`, the body's lines ending in the
            terminator).
        """
        n = len(fn.params) if block_args is None else block_args
        types = [p.type for p in fn.params[:n]]
        return self.block(
            types,
            lambda names: (self.inline(fn, list(names) + list(outer)), fn.result_types),
            arg_names=arg_names,
            terminator=terminator,
            indent=indent,
        )

    def block(
        self,
        arg_types: list[TensorType],
        build,
        *,
        arg_names: list[str] | None = None,
        terminator: str = "stablehlo.return",
        indent: str | None = None,
    ) -> tuple[list[str], list[str]]:
        """The block every body is made of: arguments of `arg_types`, the ops that
        `build(arg_names)` emits (it returns the result names and types), a terminator.

        Returns the block argument declarations and the block's lines (see `body`)."""
        saved_lines, saved_indent = self.lines, self.indent
        self.lines = []
        self.indent = saved_indent + "  " if indent is None else indent
        try:
            names = list(arg_names) if arg_names is not None else [self.fresh() for _ in arg_types]
            decls = [f"{v}: {mlir_type(t)}" for v, t in zip(names, arg_types)]
            outs, out_types = build(names)
            types = ", ".join(mlir_type(t) for t in out_types)
            self.lines.append(self.indent + _terminator(terminator, outs, types))
            return decls, self.lines
        finally:
            self.lines, self.indent = saved_lines, saved_indent

    def region(self, fn: Function, *, block_args: int | None = None, outer=()) -> str:
        """`fn` as an MLIR region `{ ^bb0(...): ... stablehlo.return }` (see `body`)."""
        return self._wrap(*self.body(fn, block_args=block_args, outer=outer))

    def built_region(self, arg_types: list[TensorType], build) -> str:
        """A region whose ops `build(arg_names)` emits directly (see `block`)."""
        return self._wrap(*self.block(arg_types, build))

    def _wrap(self, decls: list[str], lines: list[str]) -> str:
        label = f"{self.indent}^bb0({', '.join(decls)}):\n" if decls else ""
        return "{\n" + label + "\n".join(lines) + f"\n{self.indent}}}"


def emit(
    fn: Function,
    *,
    arg_attrs: list[str] | None = None,
    module_attrs: str = "",
    result_attrs: list[str] | None = None,
    num_partitions: int = 1,
    ctx: EmitContext | None = None,
) -> str:
    """The StableHLO module (text) for `fn`, exported as `@main`.

    Args:
        fn: a verified IR function.
        arg_attrs: optional MLIR attribute dictionaries, one per parameter
            (e.g. `{tf.aliasing_output = 0 : i32}` for donation).
        module_attrs: extra module attributes.
        result_attrs: optional MLIR attribute dictionaries, one per result (e.g. shardings).
        num_partitions: devices of an SPMD program (`mhlo.num_partitions`).
        ctx: an emission context to use (module-level ops already in it are kept).
    Returns:
        MLIR text that `compile_and_load` accepts.
    """
    ctx = ctx or EmitContext()
    ctx.callback_keys = callback_keys(fn)  # host callbacks: their indices in PJRT's list
    arg_names = [f"%arg{i}" for i in range(len(fn.params))]
    decls, lines = ctx.body(fn, arg_names=arg_names, terminator="func.return", indent="    ")
    params = [
        d + (f" {arg_attrs[i]}" if arg_attrs and arg_attrs[i] else "") for i, d in enumerate(decls)
    ]
    rdecl = ", ".join(mlir_type(v.type) for v in fn.results)
    if result_attrs:
        rdecl = ", ".join(
            mlir_type(v.type) + (f" {a}" if a else "") for v, a in zip(fn.results, result_attrs)
        )
    mattrs = f"mhlo.num_partitions = {num_partitions} : i32, mhlo.num_replicas = 1 : i32"
    if module_attrs:
        mattrs += ", " + module_attrs
    return "\n".join(
        [
            f"module @purejit_{symbol_name(fn.name)} attributes {{{mattrs}}} {{",
            *(f"  {m}" for m in ctx.module_ops.values()),
            f"  func.func public @main({', '.join(params)}) -> ({rdecl}) {{",
            *lines,
            "  }",
            "}",
        ]
    )


def symbol_name(name: str) -> str:
    """`name` as an MLIR symbol XLA accepts: ASCII letters, digits and underscores.

    Accents are dropped (`café` -> `cafe`); other characters become `_` or, when they are
    letters of another script, their code point (`函数` -> `u51fd_u6570`), so the name stays
    readable and two different names stay apart.
    """
    out: list[str] = []
    after_code = False  # the last thing written is a code point: keep the next text apart
    for c in unicodedata.normalize("NFKD", name):
        if unicodedata.combining(c):
            continue  # the accent of a letter already written
        if c.isascii():
            ok = c.isalnum() or c == "_"
            out.append(("_" if after_code and c != "_" else "") + (c if ok else "_"))
            after_code = False
        elif c.isalnum():
            out.append(("_" if out and not out[-1].endswith("_") else "") + f"u{ord(c):04x}")
            after_code = True
        else:
            out.append("_")
            after_code = False
    return "".join(out) or "fn"


def verify_module(text: str) -> None:
    """Parse and verify `text` with jaxlib's MLIR bindings; raises on an invalid module."""
    from jaxlib.mlir import ir  # jaxlib loads when a module is checked, not on import

    with mlir_context.context() as ctx:
        module = ir.Module.parse(text, ctx)
        if not module.operation.verify():
            raise ValueError("StableHLO module failed verification")
