"""JAX's type promotion, weak types included, with x64 off (the default).

Every pair of dtypes and Python scalars is promoted by purejit.numpy and by jax.numpy; the
result dtype and weak flag must agree. The jit path is checked by lowering (tracing only, no
XLA compile) and the eager path on 0-d arrays (one compiled `add` per result dtype).
"""

import itertools

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from purejit.passes import Pipeline

import purejit
import purejit.numpy as jnp
from purejit import dtypes as pdt

NO_PASSES = Pipeline(passes=[])  # types come from tracing; skip the optimiser for speed

DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    ml_dtypes.bfloat16, np.float16, np.float32, np.float64, np.complex64,
]  # fmt: skip
SCALARS = {"bool": True, "int": 3, "float": 1.5, "complex": 1 + 2j}


def _operands():
    ops = [(np.dtype(d).name, np.ones((), d)) for d in DTYPES]
    return ops + list(SCALARS.items())


OPERANDS = _operands()
PAIRS = list(itertools.product(OPERANDS, OPERANDS))


def _jax_result(fn, a, b):
    out = jax.eval_shape(fn, a, b)  # JAX's own promotion, traced without compiling
    return np.dtype(out.dtype), bool(out.weak_type)


def test_binary_promotion_matches_jax_under_jit():
    """All 18 x 18 operand kinds through `purejit.jit(add).lower`: dtype and weak flag."""
    lower = purejit.jit(jnp.add, passes=NO_PASSES).lower
    mismatches = []
    for (na, a), (nb, b) in PAIRS:
        want = _jax_result(jjnp.add, a, b)
        (aval,) = lower(a, b).out_avals
        got = (np.dtype(aval.dtype), aval.weak_type)
        if got != want:
            mismatches.append(f"{na} + {nb}: purejit {got}, jax {want}")
    assert not mismatches, "\n".join(mismatches)


def test_binary_promotion_matches_jax_eagerly():
    """The same table on the eager path, for arrays against arrays and Python scalars."""
    mismatches = []
    for (na, a), (nb, b) in PAIRS:
        if isinstance(a, bool) and isinstance(b, bool):
            continue  # Python's own `True + True`; nothing of purejit's runs
        want = _jax_result(jjnp.add, a, b)
        r = jnp.add(a, b)
        got = (np.dtype(r.dtype), r.weak_type)
        if got != want:
            mismatches.append(f"{na} + {nb}: purejit {got}, jax {want}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("fname", ["multiply", "maximum", "where_", "true_divide", "less"])
def test_other_ops_promote_like_jax(fname):
    """Arithmetic, comparison, `where` and true division follow the same table."""
    lower = purejit.jit(_fn(jnp, fname), passes=NO_PASSES).lower
    ref = _fn(jjnp, fname)
    rows = ("int8", "uint32", "bfloat16", "float16", "int", "float", "bool")
    subset = [p for p in PAIRS if p[0][0] in rows]
    if fname == "less":  # ordering complex numbers is not supported (see test below)
        subset = [p for p in subset if "complex" not in p[1][0]]
    for (na, a), (nb, b) in subset:
        want = _jax_result(ref, a, b)
        (aval,) = lower(a, b).out_avals
        assert (np.dtype(aval.dtype), aval.weak_type) == want, f"{fname}({na}, {nb})"


def test_ordering_complex_numbers_matches_jax():
    # JAX orders complex numbers lexicographically (real part, then imaginary part)
    a = np.array([1 + 2j, 1 + 1j, 0.5 + 9j], np.complex64)
    for name in ("less", "less_equal", "greater", "greater_equal"):
        want = np.asarray(getattr(jjnp, name)(a, 1 + 1j))
        np.testing.assert_array_equal(np.asarray(getattr(jnp, name)(a, 1 + 1j)), want)


def _fn(np_, fname):
    if fname == "where_":
        return lambda a, b: np_.where(True, a, b)
    return getattr(np_, fname)


def test_promote_types_table_matches_jax():
    for a, b in itertools.product(DTYPES, DTYPES):
        want = jjnp.promote_types(a, b)
        got = pdt.promote_types(a, b)
        # jnp.promote_types does not canonicalise 64-bit types; purejit does when x64 is off
        assert got == pdt.canonicalize(want), (a, b)


def test_documented_examples():
    """The consequences listed in purejit/dtypes.py and the README."""
    t = pdt.result_type_weak
    names = ("uint8", "int8", "int32", "uint32", "float16", ml_dtypes.bfloat16, "float32")
    u8, i8, i32, u32, f16, bf16, f32 = (np.dtype(d) for d in names)
    assert t((u8, False), (i8, False)) == (np.dtype("int16"), False)
    assert t((i32, False), (u32, False)) == (np.dtype("int32"), False)  # i64, canonicalised
    assert t((bf16, False), (f16, False)) == (f32, False)
    assert t((i32, False), (f16, False)) == (f16, False)
    assert t((f32, False), (i32, True)) == (f32, False)  # f32 + 2
    assert t((i8, False), (f32, True)) == (f32, True)  # i8 + 2.0: weak float32
    assert t((u8, False), (i32, True)) == (u8, False)  # u8 + 300 stays u8


def test_weak_scalars_do_not_widen_arrays():
    x = np.ones(3, np.float16)
    assert jnp.add(x, 2.5).dtype == np.float16
    assert jnp.multiply(np.ones(3, np.int8), 3).dtype == np.int8
    y = purejit.jit(lambda v: v * 2 + 1)(np.ones(2, ml_dtypes.bfloat16))
    assert y.dtype == ml_dtypes.bfloat16 and not y.weak_type
    z = jnp.add(2, 3.0)  # two Python scalars: weak float32
    assert z.dtype == np.float32 and z.weak_type


def test_x64_canonicalisation_of_inputs():
    for d, want in [(np.int64, np.int32), (np.uint64, np.uint32), (np.float64, np.float32),
                    (np.complex128, np.complex64)]:  # fmt: skip
        assert jnp.asarray(np.ones(2, d)).dtype == want
        assert purejit.jit(lambda v: v)(np.ones(2, d)).dtype == want


def test_readme_promotion_table_matches_the_implementation():
    """The table in README.md is the one purejit.dtypes implements (x64 off)."""
    import pathlib

    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("<!-- promotion-table")[1].split("<!-- end promotion-table")[0]
    rows = [ln for ln in block.splitlines() if ln.startswith("| **")]
    header = [c.strip() for c in block.splitlines()[1].strip("|").split("|")][1:]
    names = {"b1": np.bool_, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "i8": np.int8,
             "i16": np.int16, "i32": np.int32, "bf16": ml_dtypes.bfloat16, "f16": np.float16,
             "f32": np.float32, "c64": np.complex64}  # fmt: skip
    weak = {"i*": np.int32, "f*": np.float32, "c*": np.complex64}

    def typed(n):
        return (np.dtype(weak[n]), True) if n in weak else (np.dtype(names[n]), False)

    assert len(rows) == len(header) == 14
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        a = cells[0].replace("\\", "")[2:-2]  # **i\*** -> i*
        for b, want in zip(header, cells[1:]):
            assert pdt.result_type_weak(typed(a), typed(b)) == typed(want), (a, b, want)
