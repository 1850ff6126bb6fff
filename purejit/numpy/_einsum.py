"""einsum: any subscripts (ellipsis, repeated indices, implicit or explicit output).

Each operand is first simplified on its own: a label repeated within it becomes one dim (its
diagonal), and a label that no other operand and not the output needs is summed away. The
operands are then contracted pairwise with `dot_general` in the order of a contraction path
(`_einsum_path`: by default the path jax.numpy.einsum gets from opt_einsum, so the same
intermediates are built): labels shared by both and still needed later are batch dims,
shared labels needed nowhere else are contracted. A final transpose puts the labels in the
output order. `einsum_path` returns the path and a report of its cost.
"""

from __future__ import annotations

import string

import numpy as np

from purejit import errors
from purejit.numpy import _core as c
from purejit.numpy._einsum_path import PathInfo, find_path
from purejit.numpy._manip import diagonal
from purejit.numpy._reductions import reduce_sum_exact
from purejit.numpy._shape import transpose
from purejit.lax.ops import dot_general as lax_dot_general

_ELLIPSIS_LABELS = [chr(0x100 + i) for i in range(64)]  # never valid subscript letters


def _fail(msg: str, cls=ValueError):
    return cls(f"einsum: {msg}{errors.at(errors.user_location())}")


def _is_label(ch: str) -> bool:
    """Any character names an axis, as in jax.numpy.einsum (Flax's grouped-query attention
    writes '...kh1d'), but the punctuation of the subscripts and purejit's own labels."""
    return ch not in ".,->" and ch not in _ELLIPSIS_LABELS


def _parse(subscripts: str, ranks: list[int]):
    """Input label lists (ellipsis expanded) and the output label list."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(ranks):
        raise _fail(f"{len(inputs)} operand subscripts for {len(ranks)} operands")
    ell_rank = 0
    parsed = []
    for term, r in zip(inputs, ranks):
        if term.count("...") > 1 or (term.replace("...", "").count(".")):
            raise _fail(f"invalid subscript {term!r}")
        named = term.replace("...", "")
        for ch in named:
            if not _is_label(ch):
                raise _fail(f"invalid subscript character {ch!r} in {subscripts!r}")
        if "..." in term:
            k = r - len(named)
            if k < 0:
                raise _fail(f"operand of rank {r} has too many subscripts {term!r}")
            ell_rank = max(ell_rank, k)
        elif len(named) != r:
            raise _fail(f"subscripts {term!r} do not match an operand of rank {r}")
        parsed.append(term)
    labels = []
    for term, r in zip(parsed, ranks):
        named = term.replace("...", "")
        if "..." in term:
            k = r - len(named)
            ell = _ELLIPSIS_LABELS[ell_rank - k : ell_rank]  # right-aligned broadcasting
            head, _, tail = term.partition("...")
            labels.append(list(head) + ell + list(tail))
        else:
            labels.append(list(term))
    ell_all = _ELLIPSIS_LABELS[:ell_rank]
    if arrow:
        if rhs.count("...") > 1:
            raise _fail(f"invalid output subscripts {rhs!r}")
        head, dots, tail = rhs.partition("...")
        # an output without '...' sums the broadcast dimensions away, as JAX's einsum does
        # (NumPy raises there)
        out = list(head) + (ell_all if dots else []) + list(tail)
        seen = set()
        for ch in head + tail:
            if not _is_label(ch):
                raise _fail(f"invalid output subscript {ch!r}")
            if ch in seen:
                raise _fail(f"output subscript {ch!r} appears more than once")
            seen.add(ch)
            if not any(ch in ls for ls in labels):
                raise _fail(f"output subscript {ch!r} does not appear in the inputs")
    else:
        counts: dict[str, int] = {}
        for ls in labels:
            for lab in ls:
                if lab not in ell_all:
                    counts[lab] = counts.get(lab, 0) + 1
        out = ell_all + sorted(lab for lab, n in counts.items() if n == 1)
    return labels, out


def _sublist_text(sub) -> str:
    out = []
    for k in sub:
        if k is Ellipsis:
            out.append("...")
        else:
            k = int(k)
            if not 0 <= k < len(string.ascii_letters):
                raise _fail(f"subscript {k} in a sublist is outside [0, 52)")
            out.append(string.ascii_letters[k])
    return "".join(out)


def _from_sublists(args):
    """NumPy's interleaved form `einsum(op0, sublist0, op1, sublist1, ..., [out_sublist])`
    (sublists of ints in [0, 52) and Ellipsis) as a subscripts string and the operands."""
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):  # an odd count: the last item is the output sublist
        out = ops.pop()
    text = ",".join(_sublist_text(sub) for sub in subs)
    if out is not None:
        text += "->" + _sublist_text(out)
    return text, ops


def _diagonal(x, labels: list[str]):
    """Merge repeated labels of one operand into a single dim (their diagonal)."""
    while True:
        dup = next((lab for i, lab in enumerate(labels) if lab in labels[:i]), None)
        if dup is None:
            return x, labels
        i = labels.index(dup)
        j = labels.index(dup, i + 1)
        if x.shape[i] != x.shape[j]:
            raise _fail(f"repeated subscript {dup!r} has sizes {x.shape[i]} and {x.shape[j]}")

        x = diagonal(x, 0, i, j)  # dims i and j removed, the diagonal appended last
        labels = [lab for k, lab in enumerate(labels) if k not in (i, j)] + [dup]


def _sum_labels(x, labels, drop):
    axes = tuple(i for i, lab in enumerate(labels) if lab in drop)
    if not axes:
        return x, labels
    # in the operands' dtype, never upcast: jax.numpy's einsum sums with lax.reduce
    return reduce_sum_exact(x, axes), [lab for lab in labels if lab not in drop]


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, out_sharding=None, _dot_general=None):  # fmt: skip
    """Einstein summation over `operands` as described by `subscripts` (NumPy's syntax).

    Args:
        subscripts: e.g. "ij,jk->ik", "...ij,...jk", "ii->i", "bhqd,bhkd->bhqk".
        *operands: the arrays.
        optimize: how to order the pairwise contractions: "auto" (as JAX: the optimal
            order for up to 4 operands, a branch-and-bound or greedy search beyond),
            "optimal", "greedy", "branch-all"/"branch-2"/"branch-1", True ("optimal"),
            False (left to right), or a path such as `einsum_path` returns.
        precision: the precision of each `dot_general`.
        preferred_element_type: the dtype of the result (default: the promoted dtype).
        out_sharding: JAX's explicit-sharding keyword; only None (the default) is supported.
        _dot_general: what contracts each pair, called as JAX's einsum calls it,
            `f(lhs, rhs, dimension_numbers, precision, preferred_element_type=...)`
            (default `lax.dot_general`; Flax passes its own).
    Returns:
        The contracted array.
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts, *operands))
    if out is not None:
        raise NotImplementedError("einsum: out= is not supported (arrays are immutable)")
    if out_sharding is not None:
        raise NotImplementedError(
            "einsum: out_sharding= (explicit-sharding mode) is not supported; shard the result "
            "with jit's out_shardings or device_put"
        )
    xs = [c._lift(x) for x in operands]
    if not xs:
        raise _fail("needs at least one operand")
    # as JAX: the operands meet at their promoted dtype; `preferred_element_type` is the
    # dtype each dot_general accumulates and returns (bf16 operands keep a bf16 GEMM)
    dt = c.result_type(*xs)
    weak = all(x.weak_type for x in xs) and preferred_element_type is None
    xs = [c.convert(x, dt) for x in xs]
    dot = {"precision": precision, "preferred_element_type": preferred_element_type}
    dot_fn = lax_dot_general if _dot_general is None else _dot_general
    labels, out_labels = _parse(subscripts, [x.ndim for x in xs])
    sizes: dict[str, int] = {}
    for x, ls in zip(xs, labels):
        for lab, n in zip(ls, x.shape):
            m = sizes.get(lab, n)
            broadcastable = lab in _ELLIPSIS_LABELS and 1 in (m, n)
            if m != n and not broadcastable:
                raise _fail(f"subscript {lab!r} has sizes {m} and {n} ({subscripts!r})")
            sizes[lab] = max(m, n) if broadcastable else n
    terms = []
    for x, ls in zip(xs, labels):
        x, ls = _diagonal(x, ls)
        # broadcast size-1 dims (ellipsis broadcasting) to the common size
        target = tuple(sizes[lab] for lab in ls)
        if x.shape != target:
            x = c.broadcast_to(x, target)
        terms.append((x, ls))
    # sum away labels that only this operand has and the output does not keep
    simplified = []
    for k, (x, ls) in enumerate(terms):
        others = set(out_labels)
        for j, (_, ls2) in enumerate(terms):
            if j != k:
                others |= set(ls2)
        simplified.append(_sum_labels(x, ls, {lab for lab in ls if lab not in others}))
    path = find_path(labels, out_labels, sizes, optimize)
    x, ls = _follow(simplified, path, out_labels, dot, dot_fn)
    x, ls = _sum_labels(x, ls, {lab for lab in ls if lab not in out_labels})
    if preferred_element_type is not None:
        x = c.convert(x, np.dtype(preferred_element_type))
    x = transpose(x, [ls.index(lab) for lab in out_labels])
    if weak:
        x = c.convert(x, x.dtype, weak=True)
    return x


def _follow(terms: list, path, out_labels, dot: dict, dot_fn):
    """Contract labelled operands along `path` (linear form: each step pops its positions
    and appends the result); returns the last operand and its labels."""
    terms = list(terms)
    for step in path:
        if len(step) > 2:
            raise NotImplementedError(
                f"einsum: the path step {step} contracts {len(step)} operands at once; "
                "purejit (as jax.numpy) contracts two at a time: pass a path of pairs"
            )
        # popped from the higher position down, as opt_einsum's steps
        popped = [terms.pop(i) for i in sorted(step, reverse=True)]
        later = set(out_labels).union(*(ls for _, ls in terms))
        if len(popped) == 1:
            x, ls = popped[0]
            terms.append(_sum_labels(x, ls, {lab for lab in ls if lab not in later}))
        else:
            # the lower position is the left operand: a two-operand einsum such as
            # "ij,jk->ik" or "bhqd,bhkd->bhqk" is then one dot_general, no transpose after
            (y, ly), (x, lx) = popped
            terms.append(_contract(x, lx, y, ly, later, dot, dot_fn))
    if len(terms) != 1:
        raise ValueError(f"einsum: the path {list(path)} leaves {len(terms)} operands, not 1")
    return terms[0]


def _contract(x, lx, y, ly, later: set, dot: dict, dot_fn):
    """`dot_fn` (a dot_general) of two labelled operands (`dot`: its precision and preferred
    element type); returns the result and its labels."""
    shared = [lab for lab in lx if lab in ly]
    batch = [lab for lab in shared if lab in later]
    contract = [lab for lab in shared if lab not in later]
    x, lx = _sum_labels(x, lx, {lab for lab in lx if lab not in ly and lab not in later})
    y, ly = _sum_labels(y, ly, {lab for lab in ly if lab not in lx and lab not in later})
    out = dot_fn(
        x, y,
        ((tuple(lx.index(lab) for lab in contract), tuple(ly.index(lab) for lab in contract)),
         (tuple(lx.index(lab) for lab in batch), tuple(ly.index(lab) for lab in batch))),
        dot["precision"], preferred_element_type=dot["preferred_element_type"],
    )  # fmt: skip
    labels = (
        batch + [lab for lab in lx if lab not in shared] + [lab for lab in ly if lab not in shared]
    )
    return out, labels


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction path `einsum` takes for these operands, and what it costs.

    Args:
        subscripts: as for `einsum`.
        *operands: the arrays (only their shapes are read).
        optimize: "auto" (the default, as JAX), "optimal", "greedy", "branch-all",
            "branch-2", "branch-1", True, False or a path.
    Returns:
        `(path, info)`: the path (a list of position tuples, which `einsum(...,
        optimize=path)` follows) and a `PathInfo` that prints the steps and their flops.
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts, *operands))
    shapes = [tuple(np.shape(x)) for x in operands]
    labels, out_labels = _parse(subscripts, [len(s) for s in shapes])
    sizes: dict[str, int] = {}
    for shape, ls in zip(shapes, labels):
        for lab, n in zip(ls, shape):
            if sizes.get(lab, 1) not in (1, n) and n != 1:
                raise _fail(f"subscript {lab!r} has sizes {sizes[lab]} and {n} ({subscripts!r})")
            sizes[lab] = max(sizes.get(lab, 1), n)
    path = find_path(labels, out_labels, sizes, optimize)
    # ellipsis dims print as letters the subscripts do not use
    free = [ch for ch in string.ascii_letters if ch not in subscripts]
    names = dict(zip(_ELLIPSIS_LABELS, free))
    text = ["".join(names.get(lab, lab) for lab in ls) for ls in labels]
    out = "".join(names.get(lab, lab) for lab in out_labels)
    named_sizes = {names.get(k, k): v for k, v in sizes.items()}
    return path, PathInfo(text, out, named_sizes, path)
