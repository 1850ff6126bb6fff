"""Dimension orders, for the layout pass (`layout.py`): permutations and what a transpose by
one moves, how a permutation passes through a reshape (the reshape's dimension groups), and
the operand orders in which XLA runs a `dot_general` without copying an operand. Pure
functions of shapes, permutations and dot attributes; nothing here rewrites a program."""

from __future__ import annotations

from purejit.ir import Op, TensorType, Value
from purejit.ir.ops.contraction import DOT_ATTRS


def inverse(perm):
    """The permutation that undoes `perm`."""
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def is_identity(perm) -> bool:
    """Whether `perm` keeps every dimension in place."""
    return all(i == p for i, p in enumerate(perm))


def _moves_data(shape, perm) -> bool:
    """Whether `transpose(x, perm)` moves bytes: not when it only moves size-1 dims."""
    big = [p for p in perm if shape[p] != 1]
    return big != sorted(big)


def transpose_bytes(v: Value, perm) -> int:
    """The bytes `transpose(v, perm)` moves: all of `v`'s, or none."""
    return v.type.nbytes if _moves_data(v.type.shape, perm) else 0


def permuted(t: TensorType, perm) -> TensorType:
    """The type of `transpose(x, perm)` for `x` of type `t`."""
    return TensorType(tuple(t.shape[p] for p in perm), t.dtype)


def reshape_groups(src, dst):
    """Split a reshape into aligned groups `(source dims, result dims)` whose sizes multiply
    to the same number, in order; a group may have no dims on one side (size-1 dims).
    None when a zero-size dimension makes the split ambiguous."""
    if 0 in src or 0 in dst:
        return None
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        gi, gj, pi, pj = [], [], 1, 1
        if i < len(src):
            pi, i = src[i], i + 1
            gi.append(i - 1)
        if j < len(dst):
            pj, j = dst[j], j + 1
            gj.append(j - 1)
        while pi != pj:
            if pi < pj and i < len(src):
                pi, i = pi * src[i], i + 1
                gi.append(i - 1)
            elif pj < pi and j < len(dst):
                pj, j = pj * dst[j], j + 1
                gj.append(j - 1)
            else:
                return None
        groups.append((gi, gj))
    return groups


def _dot_parts(op: Op):
    """A dot's operands, its batch and contracting dimensions, and each operand's free ones."""
    lb, rb, lc, rc = (tuple(op.attrs[k]) for k in DOT_ATTRS)
    lhs, rhs = op.operands
    lf = [d for d in range(lhs.type.rank) if d not in lb + lc]
    rf = [d for d in range(rhs.type.rank) if d not in rb + rc]
    return lhs, rhs, lb, rb, lc, rc, lf, rf


def dot_options(op: Op, perm, lhs_forms):
    """Every way to compute `transpose(dot, perm)` as one dot_general with operands in a
    form XLA takes without copies: yields (swap, operand A, target perm of A, operand B,
    target perm of B, new attrs). The left operand comes in the forms `lhs_forms` ("FK",
    "KF": see `operand_form`), the right one in either."""
    lhs, rhs, lb, rb, lc, rc, lf, rf = _dot_parts(op)
    nb, nlf = len(lb), len(lf)
    if sorted(perm[:nb]) != list(range(nb)):
        return
    sigma = perm[:nb]
    rest = perm[nb:]
    lf_ids = set(range(nb, nb + nlf))
    nrf = len(rf)
    arrangements = []
    if set(rest[:nlf]) == lf_ids:
        arrangements.append((False, rest[:nlf], rest[nlf:]))
    if set(rest[:nrf]) == set(rest) - lf_ids and set(rest[nrf:]) == lf_ids and nlf and nrf:
        arrangements.append((True, rest[nrf:], rest[:nrf]))
    for swap, lf_pos, rf_pos in arrangements:
        l_free = [lf[p - nb] for p in lf_pos]
        r_free = [rf[p - nb - nlf] for p in rf_pos]
        lbatch = [lb[s] for s in sigma]
        rbatch = [rb[s] for s in sigma]
        pairs = list(zip(lc, rc))
        if swap:
            a, b = rhs, lhs
            a_batch, b_batch, a_free, b_free = rbatch, lbatch, r_free, l_free
            pairs = [(r, lft) for lft, r in pairs]
        else:
            a, b = lhs, rhs
            a_batch, b_batch, a_free, b_free = lbatch, rbatch, l_free, r_free
        for key in (0, 1):
            ps = sorted(pairs, key=lambda pr: pr[key])
            a_con = [p[0] for p in ps]
            b_con = [p[1] for p in ps]
            for a_form in lhs_forms:
                a_perm, lcon = operand_form(a_form, a_batch, a_free, a_con)
                for b_form in ("FK", "KF"):
                    b_perm, rcon = operand_form(b_form, b_batch, b_free, b_con)
                    attrs = {
                        **op.attrs,
                        "lhs_batching_dimensions": tuple(range(nb)),
                        "rhs_batching_dimensions": tuple(range(nb)),
                        "lhs_contracting_dimensions": lcon,
                        "rhs_contracting_dimensions": rcon,
                    }
                    yield swap, a, a_perm, b, b_perm, attrs


def operand_form(form: str, batch, free, con):
    """An operand's dimension order for form "FK" (`[batch, free, contracting]`) or "KF"
    (`[batch, contracting, free]`), and where its contracting dimensions end up."""
    nb = len(batch)
    if form == "FK":
        return tuple(batch + free + con), tuple(range(nb + len(free), nb + len(free) + len(con)))
    return tuple(batch + con + free), tuple(range(nb, nb + len(con)))


def disorder(perm, attrs, side: str) -> int:
    """Pairs of an operand's non-batch dims that `perm` puts out of their order."""
    nb = len(attrs[f"{side}_batching_dimensions"])
    rest = perm[nb:]
    return sum(1 for i in range(len(rest)) for j in range(i + 1, len(rest)) if rest[i] > rest[j])


def canonical_dot(op: Op) -> Op:
    """Contracting pairs in the order of the left operand's dimensions."""
    lc, rc = op.attrs["lhs_contracting_dimensions"], op.attrs["rhs_contracting_dimensions"]
    pairs = sorted(zip(lc, rc))
    attrs = dict(op.attrs)
    attrs["lhs_contracting_dimensions"] = tuple(p[0] for p in pairs)
    attrs["rhs_contracting_dimensions"] = tuple(p[1] for p in pairs)
    if attrs == op.attrs:
        return op
    return Op(op.name, op.operands, attrs, op.results, op.regions, op.loc)
