"""einsum's contraction-path search: in which order to contract the operands pairwise.

A path is a list of position pairs into the list of operands still to contract; each step
removes the two operands and appends their contraction at the end (NumPy's and opt_einsum's
"linear" form; `[(1, 2), (0, 1)]` contracts operands 1 and 2, then operand 0 with that
result). The searches follow the ones jax.numpy.einsum gets from opt_einsum, so a path found
here is the path JAX contracts along (tests compare them):

  * "optimal": every order, depth first, a branch dropped once its flops reach the best
    complete path's;
  * "branch-all", "branch-2", "branch-1": the same search trying only the 2 (or 1, or all)
    cheapest candidates per step by the memory they free, outer products only when nothing
    else is left, and a branch dropped when it costs over 4x the best seen at that depth;
  * "greedy": Hadamard products of equal label sets first, then repeatedly the pair whose
    result frees the most memory (size12 - size1 - size2, ties to the lowest ids), then
    outer products smallest first;
  * "auto" (the default): "optimal" up to 4 operands, "branch-all" up to 6, "branch-2" up
    to 8, "branch-1" up to 14, "greedy" beyond.

Costs are opt_einsum's flop estimate: the product of the sizes of every label the step
touches, times (number of terms - 1, at least 1), plus one when a label is summed away.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections import defaultdict

Labels = frozenset


def size_of(labels, sizes: dict) -> int:
    """Elements of an array with these labels."""
    return math.prod(sizes[lab] for lab in labels)


def flop_count(labels, inner: bool, num_terms: int, sizes: dict) -> int:
    """opt_einsum's estimate of the cost of one contraction step."""
    return size_of(labels, sizes) * (max(1, num_terms - 1) + int(inner))


def ssa_to_linear(ssa_path) -> list[tuple[int, ...]]:
    """A path of single-assignment ids (each result a new id) as positions in the shrinking
    operand list."""
    n = sum(map(len, ssa_path)) - len(ssa_path) + 1
    ids = list(range(n))
    out = []
    for new_id, step in enumerate(ssa_path, start=n):
        pos = sorted(bisect.bisect_left(ids, s) for s in step)
        for p in reversed(pos):
            ids.pop(p)
        ids.append(new_id)
        out.append(tuple(pos))
    return out


def _step(inputs, output, remaining, i, j, sizes):
    """The labels the contraction of inputs i and j keeps, and its flops."""
    k1, k2 = inputs[i], inputs[j]
    either = k1 | k2
    keep = output.union(*(inputs[r] for r in remaining if r not in (i, j)))
    return either & keep, flop_count(either, bool((k1 & k2) - keep), 2, sizes)


def _pairs(remaining: set):
    """Pairs (i < j) of live ids in the order Python iterates the set `remaining`: the
    order opt_einsum tries them in, so that equal-cost paths are broken the same way (a set
    of ints built by the same operations iterates the same way in every process)."""
    for i, j in itertools.combinations(remaining, 2):
        yield (i, j) if i < j else (j, i)


def optimal(inputs, output, sizes) -> list[tuple[int, ...]]:
    """The cheapest path by flops, found by trying every pair order (depth first)."""
    best = {"flops": math.inf, "path": (tuple(range(len(inputs))),)}
    # keyed by the operands' label sets, as opt_einsum's cache is (so the paths agree)
    cache: dict = {}

    def walk(path, inputs, remaining, flops):
        if len(remaining) == 1:
            best["flops"], best["path"] = flops, path
            return
        for i, j in _pairs(remaining):
            key = (inputs[i], inputs[j])
            if key not in cache:
                cache[key] = _step(inputs, output, remaining, i, j, sizes)
            k12, f12 = cache[key]
            if flops + f12 >= best["flops"]:
                continue
            walk(path + ((i, j),), inputs + (k12,), (remaining - {i, j}) | {len(inputs)},
                 flops + f12)  # fmt: skip

    walk((), tuple(inputs), set(range(len(inputs))), 0)
    return ssa_to_linear(best["path"])


def branch(inputs, output, sizes, nbranch: int | None) -> list[tuple[int, ...]]:
    """Branch and bound over the `nbranch` locally best candidates of each step (all when
    None), ranked by memory freed; prunes by (flops, largest intermediate) and by 4x the
    best flops seen at the same depth."""
    inputs = tuple(inputs)
    best = {"flops": math.inf, "size": math.inf, "path": None}
    progress: dict = defaultdict(lambda: math.inf)
    sizes_of = {k: size_of(k, sizes) for k in inputs}
    cache: dict = {}

    def candidate(inputs, remaining, flops, size, i, j):
        k1, k2 = inputs[i], inputs[j]
        if (k1, k2) not in cache:
            cache[k1, k2] = _step(inputs, output, remaining, i, j, sizes)
        k12, f12 = cache[k1, k2]
        if k12 not in sizes_of:
            sizes_of[k12] = size_of(k12, sizes)
        new_flops, new_size = flops + f12, max(size, sizes_of[k12])
        if (new_flops, new_size) >= (best["flops"], best["size"]):
            return None
        depth = len(inputs)
        if new_flops < progress[depth]:
            progress[depth] = new_flops
        elif new_flops > 4 * progress[depth]:
            return None
        cost = sizes_of[k12] - sizes_of[k1] - sizes_of[k2]
        return cost, f12, new_flops, new_size, (i, j), k12

    def walk(path, inputs, remaining, flops, size):
        if len(remaining) == 1:
            best.update(flops=flops, size=size, path=path)
            return
        pairs = list(_pairs(remaining))
        found = []
        # outer products only when no pair shares a label
        for outer in (False, True):
            for i, j in pairs:
                if not outer and inputs[i].isdisjoint(inputs[j]):
                    continue
                c = candidate(inputs, remaining, flops, size, i, j)
                if c:
                    heapq.heappush(found, c)
            if found:
                break
        taken = 0
        while found and (nbranch is None or taken < nbranch):
            _, _, new_flops, new_size, (i, j), k12 = heapq.heappop(found)
            walk(path + ((i, j),), inputs + (k12,), (remaining - {i, j}) | {len(inputs)},
                 new_flops, new_size)  # fmt: skip
            taken += 1

    walk((), inputs, set(range(len(inputs))), 0, 0)
    return ssa_to_linear(best["path"])


def greedy(inputs, output, sizes) -> list[tuple[int, ...]]:
    """Contract greedily by memory freed (see the module docstring)."""
    if len(inputs) == 1:
        return [(0,)]
    inputs = [frozenset(x) for x in inputs]
    # a label every operand has can only go at the last step: treat it as an output label
    output = frozenset(output) | frozenset.intersection(*inputs)
    next_id = itertools.count(len(inputs))
    live: dict = {}  # label set -> its id
    ssa_path = []
    for i, key in enumerate(inputs):
        if key in live:  # a Hadamard product of two equal label sets, done first
            ssa_path.append((live[key], i))
            live[key] = next(next_id)
        else:
            live[key] = i
    holders = defaultdict(set)  # label -> the live label sets that still sum it
    for key in live:
        for lab in key - output:
            holders[lab].add(key)
    shared2 = {lab for lab, ks in holders.items() if len(ks) >= 2}
    shared3 = {lab for lab, ks in holders.items() if len(ks) >= 3}
    footprint = {key: size_of(key, sizes) for key in live}

    def cand(k1, k2):
        either, both = k1 | k2, k1 & k2
        k12 = (either & output) | (both & shared3) | ((either - both) & shared2)
        cost = size_of(k12, sizes) - footprint[k1] - footprint[k2]
        id1, id2 = live[k1], live[k2]
        if id1 > id2:
            k1, id1, k2, id2 = k2, id2, k1, id1
        return (cost, id2, id1), k1, k2, k12

    queue: list = []
    for keys in holders.values():
        ordered = sorted(keys, key=live.__getitem__)
        for n, k1 in enumerate(ordered[:-1]):
            heapq.heappush(queue, min(cand(k1, k2) for k2 in ordered[n + 1 :]))
    while queue:
        _, k1, k2, k12 = heapq.heappop(queue)
        if k1 not in live or k2 not in live:
            continue  # one side was contracted since
        ssa_path.append((live.pop(k1), live.pop(k2)))
        for lab in k1 - output:
            holders[lab].discard(k1)
        for lab in k2 - output:
            holders[lab].discard(k2)
        if k12 in live:
            ssa_path.append((live[k12], next(next_id)))
        else:
            for lab in k12 - output:
                holders[lab].add(k12)
        live[k12] = next(next_id)
        for lab in k1 | k2 - output:
            n = len(holders[lab])
            (shared2.add if n >= 2 else shared2.discard)(lab)
            (shared3.add if n >= 3 else shared3.discard)(lab)
        footprint[k12] = size_of(k12, sizes)
        partners = {k for lab in k12 for k in holders[lab]} - {k12}
        if partners:
            heapq.heappush(queue, min(cand(k12, k2) for k2 in partners))
    # what is left shares nothing: outer products, smallest first
    final = [(size_of(k & output, sizes), i, k) for k, i in live.items()]
    heapq.heapify(final)
    _, id1, k1 = heapq.heappop(final)
    while final:
        _, id2, k2 = heapq.heappop(final)
        ssa_path.append((min(id1, id2), max(id1, id2)))
        k12 = (k1 | k2) & output
        _, id1, k1 = heapq.heappushpop(final, (size_of(k12, sizes), next(next_id), k12))
    return ssa_to_linear(ssa_path)


def _auto(inputs, output, sizes):
    n = len(inputs)
    if n <= 4:
        return optimal(inputs, output, sizes)
    if n <= 6:
        return branch(inputs, output, sizes, None)
    if n <= 8:
        return branch(inputs, output, sizes, 2)
    if n <= 14:
        return branch(inputs, output, sizes, 1)
    return greedy(inputs, output, sizes)


_SEARCHES = {
    "auto": _auto,
    "optimal": optimal,
    "branch-all": lambda i, o, s: branch(i, o, s, None),
    "branch-2": lambda i, o, s: branch(i, o, s, 2),
    "branch-1": lambda i, o, s: branch(i, o, s, 1),
    "greedy": greedy,
    "eager": greedy,
    "opportunistic": greedy,
}
_NOT_HERE = ("dp", "dynamic-programming", "auto-hq")


def find_path(inputs, output, sizes, optimize="auto") -> list[tuple[int, ...]]:
    """The contraction path for operands with label sets `inputs` and the output labels.

    Args:
        inputs: one collection of labels per operand.
        output: the labels of the result.
        sizes: label -> dimension size.
        optimize: "auto", "optimal", "greedy", "branch-all"/"-2"/"-1", True ("optimal"),
            False (left to right, pairwise), or an explicit path (a list of tuples).
    Returns:
        The path in linear form.
    """
    n = len(inputs)
    if optimize is False:
        return [(0, 1)] * (n - 1) if n > 1 else [(0,)]
    if optimize is True or optimize is None:
        optimize = "optimal" if optimize is True else "auto"
    if not isinstance(optimize, str):
        return _checked_path(optimize, n)
    key = optimize.lower()
    if key in _NOT_HERE:
        raise NotImplementedError(
            f"einsum: optimize={optimize!r} (opt_einsum's dynamic programming) is not "
            "implemented; use 'optimal', 'greedy', 'auto' or a branch search"
        )
    if key not in _SEARCHES:
        raise KeyError(
            f"Path optimizer '{optimize}' not found, valid options are "
            f"{sorted(set(_SEARCHES) | set(_NOT_HERE))}."
        )
    if n <= 2:
        return [tuple(range(n))]
    sets = [frozenset(x) for x in inputs]
    return _SEARCHES[key](sets, frozenset(output), sizes)


def _checked_path(path, n: int) -> list[tuple[int, ...]]:
    out, left = [], n
    for step in path:
        step = tuple(int(i) for i in step)
        if not step or len(set(step)) != len(step) or not all(0 <= i < left for i in step):
            raise ValueError(f"einsum: invalid contraction {step} with {left} operands left")
        out.append(step)
        left -= len(step) - 1
    if left != 1:
        raise ValueError(f"einsum: the path {list(path)} leaves {left} operands, not 1")
    return out


class PathInfo:
    """What a contraction path costs: the path, each step's einsum, flops and scaling
    (opt_einsum's estimates), printed as a table like opt_einsum's `PathInfo`."""

    def __init__(self, inputs: list[str], output: str, sizes: dict, path):
        self.path = list(path)
        self.input_subscripts = ",".join(inputs)
        self.output_subscript = output
        self.size_dict = dict(sizes)
        all_labels = frozenset("".join(inputs))
        inner = sum(len(set(t)) for t in inputs) > len(all_labels)
        self.naive_cost = flop_count(all_labels, inner, len(inputs), sizes)
        self.contraction_list = []  # (positions, labels summed away, einsum, scaling, flops)
        self.size_list = []
        terms = list(inputs)
        for n, step in enumerate(self.path):
            popped = [terms.pop(i) for i in sorted(step, reverse=True)]
            keep = set(output).union(*terms)
            touched = set("".join(popped))
            removed = touched - keep
            if n == len(self.path) - 1:
                result = output
            else:  # the labels in the order the operands list them (fewest transposes)
                joined = "".join(popped)
                result = "".join(sorted(touched & keep, key=joined.find))
            terms.append(result)
            flops = flop_count(touched, bool(removed), len(popped), sizes)
            self.contraction_list.append(
                (
                    tuple(step),
                    frozenset(removed),
                    ",".join(popped) + "->" + result,
                    len(touched),
                    flops,
                )  # fmt: skip
            )
            self.size_list.append(size_of(result, sizes))
        self.opt_cost = sum(c[4] for c in self.contraction_list)
        self.speedup = self.naive_cost / max(self.opt_cost, 1)
        self.largest_intermediate = max(self.size_list, default=1)
        self.scale_list = [c[3] for c in self.contraction_list]

    def __repr__(self) -> str:
        lines = [
            f"  Complete contraction:  {self.input_subscripts}->{self.output_subscript}",
            f"         Naive scaling:  {len(set(self.input_subscripts) - {','})}",
            f"     Optimized scaling:  {max(self.scale_list, default=0)}",
            f"      Naive FLOP count:  {self.naive_cost:.3e}",
            f"  Optimized FLOP count:  {self.opt_cost:.3e}",
            f"   Theoretical speedup:  {self.speedup:.3e}",
            f"  Largest intermediate:  {self.largest_intermediate:.3e} elements",
            "-" * 60,
            f"{'scaling':>7}  {'flops':>10}  current",
            "-" * 60,
        ]
        for _, _, einsum_str, scale, flops in self.contraction_list:
            lines.append(f"{scale:>7}  {flops:>10.3e}  {einsum_str}")
        return "\n".join(lines)

    __str__ = __repr__
