"""einsum's contraction-path search against jax.numpy.einsum_path (opt_einsum underneath):
the same path for every search, einsum following it (results against JAX), explicit paths,
and the errors."""

from __future__ import annotations

import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.numpy import _einsum_path as ep

RNG = np.random.default_rng(1)


def _r(*shape):
    return RNG.normal(size=shape).astype(np.float32)


CASES = [
    ("ij,jk,kl->il", _r(20, 30), _r(30, 40), _r(40, 2)),
    ("ea,fb,abcd,gc,hd->efgh", _r(4, 5), _r(4, 5), _r(5, 5, 5, 5), _r(4, 5), _r(4, 5)),
    ("abc,cd,be->ead", _r(2, 3, 4), _r(4, 5), _r(3, 6)),
    ("i,j,k->ijk", _r(2), _r(3), _r(4)),
    ("...ij,...jk,...kl->...il", _r(2, 3, 4), _r(4, 5), _r(1, 5, 2)),
    ("ab,bc,cd,de,ef,fg,gh->ah", *(_r(3, 3) for _ in range(7))),
    ("ab,bc,cd,de,ef,fa,ac,bd,ce->", *(_r(2, 2) for _ in range(9))),
    ("ii,ij,jk->k", _r(3, 3), _r(3, 4), _r(4, 5)),
]
SEARCHES = ["auto", "optimal", "greedy", "branch-all", "branch-2", "branch-1", True, False]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_paths_match_jax(case):
    spec, *ops = case
    for optimize in SEARCHES:
        if optimize in ("optimal", "branch-all", True) and len(ops) > 7:
            continue  # exhaustive searches: slow in opt_einsum itself
        ref, _ = jjnp.einsum_path(spec, *ops, optimize=optimize)
        got, info = jnp.einsum_path(spec, *ops, optimize=optimize)
        assert got == [tuple(p) for p in ref], optimize
        assert info.path == got and "Complete contraction" in str(info)


def test_random_expressions_same_path_as_opt_einsum():
    # the path searches against opt_einsum on random label sets, sizes and outputs
    import opt_einsum.paths as oe

    rng = np.random.default_rng(2)
    letters = "abcdefghij"
    for _ in range(150):
        n = int(rng.integers(3, 8))
        inputs = [
            frozenset(rng.choice(list(letters[: rng.integers(4, 10)]), rng.integers(1, 4), False))
            for _ in range(n)
        ]
        out = frozenset(lab for lab in frozenset().union(*inputs) if rng.random() < 0.3)
        sizes = {lab: int(rng.choice([1, 2, 3, 5, 8])) for lab in letters}
        for name in ("greedy", "branch-2", "branch-1", "auto"):
            ref = oe.get_path_fn(name)(list(inputs), out, sizes, None)
            assert ep.find_path(inputs, out, sizes, name) == [tuple(p) for p in ref]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_einsum_follows_the_path_and_matches_jax(case):
    spec, *ops = case
    ref = jjnp.einsum(spec, *ops)
    searches = ("auto", "greedy", False)
    got = purejit.jit(lambda *a: [jnp.einsum(spec, *a, optimize=o) for o in searches])(*ops)
    for g in got:
        np.testing.assert_allclose(np.asarray(g), np.asarray(ref), rtol=2e-5, atol=2e-5)


def test_the_default_path_builds_small_intermediates():
    # (20x30)(30x40)(40x2): the path contracts the 30x40 and 40x2 pair first (2,400 flops,
    # not 24,000), so the program has a dot_general whose result is 30x2, and none of 20x40
    spec, *ops = CASES[0]
    text = purejit.jit(lambda *a: jnp.einsum(spec, *a)).lower(*ops).as_text()
    assert "tensor<30x2xf32>" in text and "tensor<20x40xf32>" not in text
    path, _ = jnp.einsum_path(spec, *ops)
    assert path == [(1, 2), (0, 1)]


def test_explicit_paths_and_errors():
    spec, *ops = CASES[0]
    ref = jjnp.einsum(spec, *ops)
    for path in ([(0, 1), (0, 1)], [(1, 2), (0, 1)], [(0, 2), (0, 1)]):
        got = jnp.einsum(spec, *ops, optimize=path)
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=2e-5, atol=2e-5)
    with pytest.raises(NotImplementedError, match="contracts 3 operands at once"):
        jnp.einsum(spec, *ops, optimize=[(0, 1, 2)])
    with pytest.raises(ValueError, match="invalid contraction"):
        jnp.einsum(spec, *ops, optimize=[(0, 5), (0, 1)])
    with pytest.raises(KeyError, match="Path optimizer 'fastest' not found"):
        jnp.einsum(spec, *ops, optimize="fastest")
    with pytest.raises(NotImplementedError, match="dynamic programming"):
        jnp.einsum_path(spec, *ops, optimize="dp")


def test_sublist_form_matches_jax():
    a, b, c = _r(2, 3), _r(3, 4), _r(4, 5)
    for args in [
        (a, [0, 1], b, [1, 2]),
        (a, [0, 1], b, [1, 2], c, [2, 3], [3, 0]),
        (a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]),
    ]:
        ref = jjnp.einsum(*args)
        np.testing.assert_allclose(np.asarray(jnp.einsum(*args)), np.asarray(ref), rtol=1e-5)
        assert jnp.einsum_path(*args)[0] == [tuple(p) for p in jjnp.einsum_path(*args)[0]]
