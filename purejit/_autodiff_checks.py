"""The checks of the differentiation API's arguments and results (`purejit.autodiff`): leaves
that must be arrays, tangents and cotangents that must match their primals and outputs,
`argnums` that must name positional arguments, and the dtypes and scalar output `grad` needs.
Each raises the error JAX raises for the same mistake, naming the API and the user's line."""

from __future__ import annotations

import operator

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit import numpy as jnp
from purejit.tracing import Tracer, aval_of
from purejit.transforms.autodiff import tangent_aval
from purejit.tree_util import tree_flatten

float0 = pdt.float0


def as_leaf(x, api: str):
    """`x` as an array (a tracer as it is); a TypeError naming `api` when it is none."""
    if isinstance(x, Tracer):
        return x
    try:
        return jnp.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{api}: argument of type {type(x).__name__} is not a valid array ({e})"
        ) from None


def check_output_leaf(x, api):
    """A TypeError unless `x`, an output of the function `api` differentiates, is an array
    or a Python number."""
    if isinstance(x, Tracer) or hasattr(x, "dtype") or isinstance(x, (int, float, complex)):
        return
    raise TypeError(
        f"{api}: the function returned a {type(x).__name__}, which is not an array"
        f"{errors.at(errors.user_location())}"
    )


def dtype_name(dt) -> str:
    """The dtype's name, as JAX's errors print it."""
    return np.dtype(dt).name


def check_tangent(api, p, t, path):
    """Errors unless tangent `t` (at `path`) has primal `p`'s shape and tangent dtype (float0
    for integer and boolean primals)."""
    pa = aval_of(p)
    expect = tangent_aval(pa).dtype
    ta_dtype = np.dtype(t.dtype) if hasattr(t, "dtype") else aval_of(t).dtype
    t_shape = tuple(np.shape(t)) if not isinstance(t, Tracer) else t.shape
    if t_shape != pa.shape:
        raise ValueError(
            f"{api}: primal and tangent arguments must have equal shapes, got primal shape "
            f"{pa.shape} and tangent shape {t_shape} at {path}"
        )
    if ta_dtype != expect:
        if expect == float0:
            raise TypeError(
                f"{api}: primal and tangent arguments do not match; dtypes must be equal, or "
                f"in case of int/bool primal dtype the tangent dtype must be float0. Got "
                f"primal dtype {dtype_name(pa.dtype)} and so expected tangent dtype float0, "
                f"but got tangent dtype {dtype_name(ta_dtype)} instead (at {path})."
            )
        raise TypeError(
            f"{api}: primal and tangent arguments do not match; dtypes must be equal. Got "
            f"primal dtype {dtype_name(pa.dtype)} and tangent dtype {dtype_name(ta_dtype)} "
            f"at {path}."
        )


def check_cotangent(api, ct_leaves, avals, tree, got_tree):
    """Errors unless the cotangent (leaves `ct_leaves`, tree `got_tree`) has the output's tree,
    shapes and tangent dtypes (a weakly typed leaf may have another dtype)."""
    if got_tree != tree:
        raise TypeError(
            f"{api}: the cotangent has tree structure {got_tree}, but the function's output "
            f"has {tree}{errors.at(errors.user_location())}"
        )
    for k, (c, a) in enumerate(zip(ct_leaves, avals)):
        ca = aval_of(c) if not isinstance(c, np.ndarray) or c.dtype != float0 else None
        want = tangent_aval(a)
        if ca is None:
            if want.dtype != float0:
                raise TypeError(f"{api}: float0 cotangent for output {k} of dtype {a.dtype}")
            continue
        if ca.shape != a.shape or (ca.dtype != want.dtype and not ca.weak_type):
            raise ValueError(
                f"{api}: the cotangent for output {k} has shape and dtype "
                f"{ca.str_short()}, but the output is {a.str_short()}; they must match"
                f"{errors.at(errors.user_location())}"
            )


def canonical_argnums(argnums, nargs, api):
    """`argnums` as a tuple of non-negative positions among `nargs` positional arguments."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        operator.index(a)
        if not -nargs <= a < nargs:
            raise TypeError(
                f"{api}: differentiating with respect to argnums={argnums} requires at least "
                f"{max(a, -a - 1) + 1} positional arguments to be passed by the caller, but "
                f"got only {nargs} positional arguments."
            )
    return tuple(a % nargs for a in nums)


def check_input_dtypes(api, leaves, holomorphic, allow_int):
    """Errors unless the differentiated inputs are real or complex (complex with holomorphic;
    any dtype with allow_int)."""
    for x in leaves:
        dt = aval_of(x).dtype
        if holomorphic:
            if dt.kind != "c":
                raise TypeError(
                    f"{api} with holomorphic=True requires inputs with complex dtype, but got "
                    f"{dtype_name(dt)}."
                )
        elif not pdt.is_inexact(dt) and not allow_int:
            raise TypeError(
                f"{api} requires real- or complex-valued inputs (input dtype that is a "
                f"sub-dtype of np.inexact), but got {dtype_name(dt)}. If you want to use "
                "Boolean- or integer-valued inputs, use vjp or set allow_int to True"
                f"{errors.at(errors.user_location())}."
            )


def check_scalar_output(api, out, holomorphic):
    """The one scalar leaf of `out`; errors unless `out` is one real scalar (complex with
    holomorphic)."""
    leaves, tree = tree_flatten(out)
    if len(leaves) != 1 or tree.kind is not None:
        raise TypeError(
            f"{api}: the function must return a scalar array, but it returned {tree} "
            f"with {len(leaves)} leaves{errors.at(errors.user_location())}"
        )
    a = aval_of(leaves[0])
    if a.shape != ():
        raise TypeError(
            f"Gradient only defined for scalar-output functions. Output had shape: {a.shape}"
            f"{errors.at(errors.user_location())}. Reduce it (e.g. .sum() or .mean()) or use "
            "vjp with an explicit cotangent."
        )
    if holomorphic:
        if a.dtype.kind != "c":
            raise TypeError(
                f"{api} with holomorphic=True requires outputs with complex dtype, but got "
                f"{dtype_name(a.dtype)}."
            )
    elif not pdt.is_inexact(a.dtype) or a.dtype.kind == "c":
        if a.dtype.kind == "c":
            raise TypeError(
                f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
                f"np.floating), but got {dtype_name(a.dtype)}. For holomorphic "
                "differentiation, pass holomorphic=True. For differentiation of "
                "non-holomorphic functions involving complex outputs, use vjp directly."
            )
        raise TypeError(
            f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dtype_name(a.dtype)}."
        )
    return leaves[0]
