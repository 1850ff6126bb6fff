"""einsum against jax.numpy.einsum: explicit and implicit outputs, ellipsis broadcasting,
repeated indices (diagonals), sums over indices of one operand, chains of operands."""

import numpy as np
import pytest
from jnp_compare import check_cases

import purejit
import purejit.numpy as jnp

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.normal(size=shape).astype(np.float32)


SPECS = [
    ("ij,jk->ik", _r(3, 4), _r(4, 5)),
    ("ij,jk", _r(3, 4), _r(4, 5)),
    ("ii->i", _r(4, 4)),
    ("ii", _r(4, 4)),
    ("iij->ji", _r(3, 3, 2)),
    ("ij->ji", _r(2, 3)),
    ("ij->", _r(2, 3)),
    ("i,i->", _r(5), _r(5)),
    ("i,j->ij", _r(2), _r(3)),
    ("...ij,...jk->...ik", _r(2, 1, 3, 4), _r(5, 4, 6)),
    ("i...->...", _r(3, 2, 4)),
    ("...i,i", _r(2, 3), _r(3)),
    ("bhqd,bhkd->bhqk", _r(2, 3, 4, 5), _r(2, 3, 6, 5)),
    ("ijk,jil->kl", _r(2, 3, 4), _r(3, 2, 5)),
    ("ij,jk,kl->il", _r(2, 3), _r(3, 4), _r(4, 5)),
    ("abc,cd,be->ead", _r(2, 3, 4), _r(4, 5), _r(3, 6)),
    ("ij,ij->ij", _r(2, 3), _r(2, 3)),
    ("ba,ab", _r(3, 2), _r(2, 3)),
    ("ijk,k->", _r(2, 3, 4), _r(4)),
    ("i,j,k->jki", _r(2), _r(3), _r(4)),
    ("ij,kl->", _r(2, 3), _r(4, 5)),
    (" i j , j k -> k i ", _r(2, 3), _r(3, 4)),
    # any character is a label, as in jax.numpy (Flax's grouped-query attention: '1')
    ("...qhgd,...kh1d->...hgqk", _r(2, 3, 2, 4, 5), _r(2, 3, 2, 1, 5)),
    ("a1,1_", _r(2, 3), _r(3, 4)),
]


def test_einsum_matches_jax():
    cases = {}
    args = []
    for spec, *ops in SPECS:
        first = len(args)
        args.extend(ops)
        cases[spec] = lambda m, *a, spec=spec, s=slice(first, first + len(ops)): m.einsum(
            spec, *a[s])  # fmt: skip
    check_cases(cases, *args, rtol=1e-5, atol=1e-5,
                eager=["...ij,...jk->...ik", "iij->ji", "abc,cd,be->ead"])  # fmt: skip


def test_einsum_dtypes():
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    cases = {
        "int": lambda m, a, b: m.einsum("ij,j->i", a, a[0]),
        "mixed int/float": lambda m, a, b: m.einsum("ij,j->i", a, b),
        "preferred_element_type": lambda m, a, b: m.einsum(
            "ij,j->i", a, a[0], preferred_element_type=m.float32
        ),
    }
    check_cases(cases, i, _r(3), rtol=1e-5, atol=1e-5, eager=True)


def test_einsum_lowers_to_dot_general():
    text = purejit.jit(lambda a, b: jnp.einsum("bij,bjk->bik", a, b)).lower(
        _r(2, 3, 4), _r(2, 4, 5)).ir()  # fmt: skip
    assert "dot_general" in text and "reduce" not in text


@pytest.mark.parametrize(
    "spec, shapes, msg",
    [
        ("ij,jk->ik", [(2, 3), (4, 5)], "sizes 3 and 4"),
        ("ij->ik", [(2, 3)], "does not appear"),
        ("ij->ii", [(2, 2)], "more than once"),
        ("ijk->", [(2, 3)], "do not match"),
        ("ij,jk->ik", [(2, 3)], "1 operands"),
        ("i.j->i", [(2, 3)], "invalid subscript"),
    ],
)
def test_einsum_errors(spec, shapes, msg):
    with pytest.raises(ValueError, match=msg):
        jnp.einsum(spec, *[np.ones(s, np.float32) for s in shapes])


@pytest.mark.parametrize("spec", ["...n,...->n", "...ij->j", "...ij->", "i...->i", "...j,...j->"])
def test_an_output_without_ellipsis_sums_the_broadcast_dimensions_as_jax(spec):
    # NumPy raises here; JAX's einsum sums the '...' dimensions the output leaves out
    jax = pytest.importorskip("jax")
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) / 7
    b = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 3
    ops = (a, b) if spec.count(",") else (a,)
    if spec == "...j,...j->":
        ops = (a, a)
    got = purejit.jit(lambda *o: jnp.einsum(spec, *o))(*ops)
    want = jax.jit(lambda *o: jax.numpy.einsum(spec, *o))(*ops)
    assert np.asarray(got).shape == np.asarray(want).shape
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
