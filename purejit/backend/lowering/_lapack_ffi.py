"""The helpers the linalg family's lowering (`linalg.py`) shares: the platform being emitted
for, jaxlib's LAPACK table, typed-FFI custom calls laid out as JAX lays them out, and small IR
programs inlined into the module (NaN for failed batch elements, triangles, slices).
"""

from __future__ import annotations

import functools

import numpy as np

from purejit.backend import pjrt
from purejit.ir import Builder, TensorType, dtypes

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
_GPU_PREFIX = {"cuda": "cu", "rocm": "hip"}


def platform(ctx) -> str:
    """'cpu', 'cuda', 'rocm' or another PJRT platform name, for the module being emitted."""
    p = getattr(ctx, "platform", None) or pjrt.platform()
    if p == "gpu":
        version = str(getattr(pjrt.default_device().client, "platform_version", "")).lower()
        return "rocm" if "rocm" in version else "cuda"
    return p


@functools.lru_cache(maxsize=None)
def _lapack_ready() -> bool:
    from jaxlib import lapack  # the runtime's LAPACK table; jaxlib loads with the backend

    lapack.prepare_lapack_call("potrf_ffi", np.dtype(np.float32))
    return True


@functools.lru_cache(maxsize=None)
def _hybrid_ready() -> bool:
    from jaxlib import gpu_solver  # fills the GPU plugin's host-LAPACK table, as JAX does

    gpu_solver.initialize_hybrid_kernels()
    return True


def _lapack(base: str, dtype) -> str:
    _lapack_ready()
    return f"lapack_{_PREFIX[np.dtype(dtype).name]}{base}"


# ---- custom calls ---------------------------------------------------------------------------


def _layout(rank: int, column_major: bool) -> str:
    if rank == 0:
        return "dense<> : tensor<0xindex>"
    dims = (rank - 2, rank - 1, *range(rank - 3, -1, -1)) if column_major else range(rank)[::-1]
    return f"dense<[{', '.join(map(str, dims))}]> : tensor<{rank}xindex>"


def char(c: str) -> str:
    """A LAPACK character flag as the FFI handlers take it: `76 : ui8` for 'L'."""
    return f"{ord(c)} : ui8"


def ffi_call(
    ctx,
    target: str,
    args: list[str],
    arg_types: list[TensorType],
    result_types: list[TensorType],
    config: dict[str, str],
    *,
    aliases: dict[int, int] | None = None,
    column_major: bool = True,
    non_batch_dims: int = 2,
) -> list[str]:
    """Emit a typed-FFI custom call as JAX does: matrices (the operands and results of the
    operands' largest rank) laid out column-major, `config` as `mhlo.backend_config`,
    `aliases` mapping result index -> operand index (buffers reused in place)."""
    top = max(t.rank for t in arg_types)
    lay = lambda t: _layout(t.rank, column_major and t.rank == top)  # noqa: E731
    alias_text = ", ".join(
        "#stablehlo.output_operand_alias<output_tuple_indices = "
        f"[{out if len(result_types) > 1 else ''}], operand_index = {arg}, "
        "operand_tuple_indices = []>"
        for out, arg in (aliases or {}).items()
    )
    cfg = ", ".join(f"{k} = {v}" for k, v in sorted(config.items()))
    attrs = (
        f'api_version = 1 : i32, backend_config = "", call_target_name = "{target}", '
        "called_computations = [], has_side_effect = false, "
        f"operand_layouts = [{', '.join(lay(t) for t in arg_types)}], "
        f"output_operand_aliases = [{alias_text}], "
        f"result_layouts = [{', '.join(lay(t) for t in result_types)}], "
        f"mhlo.backend_config = {{{cfg}}}, "
        f'mhlo.frontend_attributes = {{num_batch_dims = "{top - non_batch_dims}"}}'
    )
    return ctx.op("stablehlo.custom_call", args, arg_types, result_types, attrs)


# ---- small IR programs inlined into the module ----------------------------------------------


def inline_ir(ctx, build, arg_types: list[TensorType], args: list[str]) -> list[str]:
    """Emit the IR ops that `build(builder, *params)` makes (returning result values),
    with the params bound to the MLIR values `args`."""
    b = Builder("linalg_lowering")
    params = [b.param(t) for t in arg_types]
    return ctx.inline(b.finish(list(build(b, *params))), args)


def _const(b: Builder, value, dtype):
    (c,) = b.op("constant", [], {"value": np.array(value, dtype)})
    return c


def _splat(b: Builder, value, t: TensorType):
    c = _const(b, value, t.dtype)
    (out,) = b.op("broadcast_in_dim", [c], {"shape": t.shape, "broadcast_dimensions": ()})
    return out


def _cmp(b: Builder, x, y, direction: str):
    (out,) = b.op("compare", [x, y], {"comparison_direction": direction})
    return out


def _nan_unless(b: Builder, ok, x):
    """`x` where the batch element is `ok` (pred[batch...]), NaN elsewhere."""
    t = x.type
    okb = b.op(
        "broadcast_in_dim",
        [ok],
        {"shape": t.shape, "broadcast_dimensions": tuple(range(ok.type.rank))},
    )[0]
    nan = complex(np.nan, np.nan) if dtypes.is_complex(t.dtype) else np.nan
    (out,) = b.op("select", [okb, x, _splat(b, nan, t)])
    return out


def _info_ok(b: Builder, info, direction: str = "EQ"):
    return _cmp(b, info, _splat(b, 0, info.type), direction)


def _triangle(b: Builder, x, *, lower: bool):
    """The lower (or upper) triangle of each matrix of `x`, zeros elsewhere."""
    t = x.type
    shape = t.shape
    n = len(shape)
    rows = b.op("iota", [], {"shape": shape, "dtype": np.dtype(np.int32), "dimension": n - 2})[0]
    cols = b.op("iota", [], {"shape": shape, "dtype": np.dtype(np.int32), "dimension": n - 1})[0]
    keep = _cmp(b, rows, cols, "GE" if lower else "LE")
    (out,) = b.op("select", [keep, x, _splat(b, 0, t)])
    return out


def _slice_last2(b: Builder, x, rows: int, cols: int):
    shape = x.type.shape
    if shape[-2:] == (rows, cols):
        return x
    n = len(shape)
    (out,) = b.op(
        "slice",
        [x],
        {
            "start_indices": (0,) * n,
            "limit_indices": shape[:-2] + (rows, cols),
            "strides": (1,) * n,
        },
    )
    return out


def _gpu(ctx) -> str | None:
    return _GPU_PREFIX.get(platform(ctx))


def _cpu_only(op: str, ctx):
    if platform(ctx) != "cpu":
        raise NotImplementedError(
            f"{op}: no lowering for platform {platform(ctx)!r}; LAPACK's {op} runs on CPU only "
            "(as in JAX): compute it on a CPU device (jax.devices('cpu'))"
        )


def _no_rule(op: str, ctx):
    raise NotImplementedError(
        f"{op}: no lowering for platform {platform(ctx)!r} (CPU uses LAPACK, CUDA/ROCm the "
        "GPU solver libraries)"
    )


# ---- Householder kernels (geqrf, orgqr, ormqr), shared by the qr, hessenberg and householder
# lowerings ------------------------------------------------------------------------------------


def _householder_target(ctx, op: str, lapack_base: str, dtype) -> str:
    """LAPACK's `?{lapack_base}_ffi` (orXXX for reals, unXXX for complex where the name has
    the or/un prefix) on CPU, cuSOLVER's `{lapack_base}` on CUDA/ROCm."""
    if platform(ctx) == "cpu":
        if lapack_base.startswith("or") and dtypes.is_complex(dtype):
            lapack_base = "un" + lapack_base[2:]
        return _lapack(f"{lapack_base}_ffi", dtype)
    gpu = _gpu(ctx)
    if gpu:
        return f"{gpu}solver_{lapack_base}_ffi"
    _no_rule(op, ctx)


def geqrf_call(ctx, op: str, a: str, t: TensorType) -> list[str]:
    """(h, taus) of LAPACK/cuSOLVER geqrf on the non-empty matrices `a` of type `t`."""
    taus_t = TensorType(t.shape[:-2] + (min(t.shape[-2:]),), t.dtype)
    target = _householder_target(ctx, op, "geqrf", t.dtype)
    return ffi_call(ctx, target, [a], [t], [t, taus_t], {}, aliases={0: 0})


def orgqr_call(ctx, op: str, h: str, taus: str, h_t: TensorType, taus_t: TensorType) -> str:
    """The first columns of H_0 ... H_{k-1} (LAPACK orgqr/ungqr, cuSOLVER orgqr), the
    reflectors below the diagonal of `h` (rows >= columns)."""
    target = _householder_target(ctx, op, "orgqr", h_t.dtype)
    return ffi_call(ctx, target, [h, taus], [h_t, taus_t], [h_t], {}, aliases={0: 0})[0]


def gehrd_call(ctx, op: str, a: str, t: TensorType) -> list[str]:
    """(h, taus, info) of LAPACK gehrd (ilo = 1, ihi = n) on square matrices of n >= 2
    (CPU only, as in JAX)."""
    _cpu_only(op, ctx)
    batch, n = t.shape[:-2], t.shape[-1]
    taus_t = TensorType(batch + (n - 1,), t.dtype)
    info_t = TensorType(batch, np.int32)
    config = {"low": "1 : i32", "high": f"{n} : i32"}
    target = _lapack("gehrd_ffi", t.dtype)
    return ffi_call(ctx, target, [a], [t], [t, taus_t, info_t], config, aliases={0: 0})
