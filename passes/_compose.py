"""A loop body run for m consecutive trips in one program, for the host loop
(`compiler_options={"host_layers_per_run": k}`; `_segments.split` uses it).

The single trip's body (its parameters, its ops after the host's picks, its results) is
cloned m times in one program: trip j's carries are trip j-1's carry results, each
per-trip parameter (a row of an xs, a row read at a known index) is a parameter of the
program once per trip, and a loop constant once. The program's parameters are made as
its ops first read them, each named by a key: `(i, None)` for the body's parameter i when
the same on every trip (a loop constant), `(i, j)` for its value on trip j of the run
(trip 0's carry, or a per-trip row). A body result that is a parameter (a value passed
through) is not an output: the host hands the input's buffer on, as for one trip.
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Function, Op, Value


@dataclass
class Run:
    """m trips as one program: `fn`; `keys`: what each of its parameters is (module
    docstring); `refs[j]`: per body result on trip j, `("out", position in fn.results)`,
    `("in", key)` (an input passed through) or None (a carry the next trip reads inside)."""

    fn: Function
    keys: list[tuple]
    refs: list[list[tuple]]


def compose(name: str, params: list[Value], kinds: list, ops: list[Op], results: list[Value],
            ncar: int, m: int) -> Run:  # fmt: skip
    """The body (`params`, `ops`, `results`: carries first) for m trips. `kinds[i]`:
    "const" (the same on every trip), ("carry", c) or "trip" (a row per trip)."""
    fparams: list[Value] = []
    keys: list[tuple] = []
    made: dict[tuple, Value] = {}

    def value(ref: tuple) -> Value:
        if ref[0] == "v":
            return ref[1]
        key = ref[1]
        if key not in made:
            i = key[0]
            made[key] = Value(params[i].type)
            fparams.append(made[key])
            keys.append(key)
        return made[key]

    refs: list[list[tuple]] = []
    body: list[Op] = []
    prev: list[tuple] | None = None
    for j in range(m):
        env: dict[Value, tuple] = {}
        for i, p in enumerate(params):
            kind = kinds[i]
            if kind == "const":
                env[p] = ("in", (i, None))
            elif kind == "trip":
                env[p] = ("in", (i, j))
            else:
                env[p] = ("in", (i, 0)) if j == 0 else prev[kind[1]]
        for op in ops:
            new = Op(op.name, [value(env[u]) for u in op.operands], op.attrs,
                     [Value(r.type) for r in op.results], op.regions, op.loc)  # fmt: skip
            body.append(new)
            for r, v in zip(op.results, new.results):
                env[r] = ("v", v)
        prev = [env[r] for r in results]
        refs.append(prev)
    outs: dict[Value, int] = {}
    for j, row in enumerate(refs):
        for k, ref in enumerate(row):
            if ref[0] == "v" and (k >= ncar or j == m - 1) and ref[1] not in outs:
                outs[ref[1]] = len(outs)
    # a carry of a trip before the last is no output (None: the next trip reads it inside)
    refs = [
        [(("out", outs[r[1]]) if r[1] in outs else None) if r[0] == "v" else r for r in row]
        for row in refs
    ]
    fn = Function(name if m == 1 else f"{name}_x{m}", fparams, body, list(outs))
    return Run(fn, keys, refs)


def launch_runs(sp, launch_cls, name: str, params: list[Value], sources: list, ops: list[Op],
                results: list[Value], ncar: int, ts: list[int], init: list[int],
                per_run: int) -> tuple[list[int], list[dict], dict]:  # fmt: skip
    """The loop's trips `ts` as launches of programs of `per_run` trips (the last run the
    remainder: a program of its own), appended to splitter `sp`'s programs and launches.
    `sources[i]`: where body parameter i comes from (a slot; `("carry", c)`; per trip, a
    slot or value ref). Returns the final carries' slots, per stacked output its slot per
    trip, and the report's figures. A loop whose per-trip input is a carry on some trip
    (the host picks it) runs one trip per program."""
    kinds = [
        "const" if isinstance(src, int) else src if isinstance(src, tuple) else "trip"
        for src in sources
    ]
    why = None
    if per_run > 1 and any(
        isinstance(ref, tuple) for src in sources if isinstance(src, dict) for ref in src.values()
    ):
        why = "a trip's row is a carry picked on the host"
        per_run = 1
    runs = [ts[i : i + per_run] for i in range(0, len(ts), per_run)]
    progs: dict[int, tuple[int, Run]] = {}
    carry = list(init)
    ys: list[dict] = [{} for _ in results[ncar:]]
    for trips in runs:
        m = len(trips)
        if m not in progs:
            run = compose(name, params, kinds, ops, results, ncar, m)
            progs[m] = (len(sp.programs), run)
            sp.programs.append(run.fn)
            sp.kinds.append("body")
        prog, run = progs[m]

        def slot(key, trips=trips, carry=carry):
            i, j = key
            src = sources[i]
            if isinstance(src, int):
                return src
            if isinstance(src, tuple):
                return carry[src[1]]
            ref = src[trips[j]]
            return carry[ref[1]] if isinstance(ref, tuple) else sp.ref_slot(ref)

        ins = [slot(k) for k in run.keys]
        outs = [sp.new_slot() for _ in run.fn.results]
        sp.launches.append(launch_cls(prog, ins, outs))
        for j, t in enumerate(trips):
            res = [
                None if r is None else outs[r[1]] if r[0] == "out" else slot(r[1])
                for r in run.refs[j]
            ]
            for k, s in enumerate(res[ncar:]):
                ys[k][t] = s
        carry = res[:ncar]
    info = {"per_run": per_run, "runs": len(runs), "programs": len(progs),
            "params": len(progs[len(runs[0])][1].fn.params),
            "results": len(progs[len(runs[0])][1].fn.results)}  # fmt: skip
    if why:
        info["one_trip_per_run"] = why
    return carry, ys, info
