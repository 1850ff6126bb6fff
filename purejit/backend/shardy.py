"""Shardy (`sdy` dialect) text: the module's device mesh and the sharding of a value.

A program that runs over devices declares one mesh `@mesh`; `sdy.sharding` attributes on the
arguments and results of `@main`, and `sdy.manual_computation` ops, refer to it by name.
"""

from __future__ import annotations


def sdy_mesh(axis_names, mesh_shape) -> str:
    """The `sdy.mesh @mesh` op for a mesh."""
    axes = ", ".join(f'"{n}"={int(s)}' for n, s in zip(axis_names, mesh_shape))
    return f"sdy.mesh @mesh = <[{axes}]>"


def sdy_dims(spec) -> str:
    """`<@mesh, [{"x"}, {}]>`: one closed dimension sharding per dimension of `spec`."""
    dims = ", ".join("{" + ", ".join(f'"{a}"' for a in axes) + "}" for axes in spec)
    return f"<@mesh, [{dims}]>"


def sdy_sharding_attr(spec) -> str:
    """An argument/result attribute dictionary placing a value as `spec` says."""
    return f"{{sdy.sharding = #sdy.sharding{sdy_dims(spec)}}}"


def declare_mesh(ctx, axis_names, mesh_shape) -> None:
    """Declare the mesh in the module being emitted by `ctx` (an `EmitContext`); a second,
    different mesh is an error."""
    text = sdy_mesh(axis_names, mesh_shape)
    if ctx.module_ops.setdefault("mesh", text) != text:
        raise NotImplementedError(
            f"a program over two meshes ({ctx.module_ops['mesh']} and {text}); purejit "
            "compiles one mesh per program"
        )
