"""Splitting a rolled program at its top-level scans, for the host loop (`roll_layers="host"`).

`roll_layers` turns a chain of a jitted layer's calls into one `scan` over stacks: the
per-layer parameters stacked into its xs, what each layer saves for the backward pass
stacked into its ys, which a later (reverse) scan reads row by row. XLA copies every such
value into its row and back out (a GPU's library calls take whole buffers). The host loop
keeps the rolled program's single compile of the layer and drops the stacks: `split` cuts
the program into programs of its own, which the host runs in order
(`purejit/compiler/host_loop.py`):

  - each top-level scan's body is one program, launched once per trip;
  - each stretch of top-level ops between scans is one program (a "glue" program).

Every value passed between launches is a buffer in a numbered slot. A stack is never
built: a scan's ys are one slot per trip (a "virtual" stack: its rows); a stack the roll
pass built from per-layer values (`concatenate` of rows) is the list of those values; a
constant stack is its rows, transferred once. Such a stack may be read only as rows:

  - as a scan's xs: trip t takes row t;
  - as a scan's loop constant that the body reads only by `dynamic_slice` of one whole row
    at a start index known per trip (a constant, or a body parameter fed from a constant
    xs: the roll pass's row indices): trip t takes the row the slice clamps its index to;
  - by a top-level `dynamic_slice` of one row at an index known on the host (a constant,
    or a result of `_row_index.py`'s loop, proved to return its operands), or a `slice`
    along the leading axis: the row's slot (or a shorter virtual stack).

A top-level scan whose xs are not rows (a stack the program was given, or computed) or
whose ys something reads other than as rows (returned, read whole) is not split: it stays
one op of its glue program, with the reason in the report (`kept`). Anything else that
reads a split scan's ys whole (a later split loop's body reading it other than by rows) is
refused, as is a program with effects (callbacks, collectives, anything not pure) or with
no scan split: the program then runs as the rolled program, with the reason. A stack built
from values is built only where something reads it whole (in its glue program).

Before the split, a value a loop's body returns as several ys is returned once
(`_same_rows.py`), and each layer's own work after a loop (its update) moves into the loop's
body where proved (`_fold_rows.py`); a body may run k trips a launch (`_compose.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from purejit.ir import Function, Op, TensorType, Value
from purejit.passes._compose import launch_runs
from purejit.passes._fold_rows import fold_rows
from purejit.passes._known_ints import int_of as _int_of
from purejit.passes._known_ints import is_int_scalar as _is_int_scalar
from purejit.passes._known_ints import leading_slice as _leading_slice
from purejit.passes._known_ints import picked_on_host as _picked_on_host
from purejit.passes._known_ints import row_index as _row_index
from purejit.passes._same_rows import merge_same_rows
from purejit.passes.base import has_effect


class Refused(Exception):
    """The program cannot be split (the message says why)."""


@dataclass
class Launch:
    """One run of `program` (an index into `Split.programs`): its parameters read slots
    `ins`, its results are written to slots `outs`; `donate`: parameter positions whose
    buffer it may take over (a donated entry parameter read for the last time); `free`:
    slots nothing reads after this launch."""

    program: int
    ins: list[int]
    outs: list[int]
    donate: tuple[int, ...] = ()
    free: tuple[int, ...] = ()


@dataclass
class Split:
    """The program as programs and launches over slots. Slots `0..len(params)-1` are the
    entry's parameters; `constants` are transferred once; `results` are the entry's."""

    programs: list[Function]
    kinds: list[str]  # per program: "glue", "body" or "copy"
    launches: list[Launch]
    n_slots: int
    n_params: int
    constants: dict[int, np.ndarray]
    results: list[int]
    report: dict = field(default_factory=dict)


class _Glue:
    """A stretch of top-level ops between scans, being rebuilt as a program of its own."""

    def __init__(self, index: int):
        self.index = index
        self.ops: list[Op] = []
        self.env: dict[Value, Value] = {}  # top-level value -> its value in this program
        self.params: list[tuple[int, Value]] = []  # (slot, parameter)
        self._param_of: dict[int, Value] = {}
        self.exports: list[tuple[Value, int]] = []  # (value here, slot)
        self.launch: Launch | None = None

    def param_for(self, slot: int, t) -> Value:
        if slot not in self._param_of:
            p = Value(t)
            self._param_of[slot] = p
            self.params.append((slot, p))
        return self._param_of[slot]


class _Splitter:
    def __init__(self, fn: Function, donated, per_run: int = 1):
        self.fn = fn
        self.donated = donated
        self.per_run = per_run
        self.n_params = len(fn.params)
        self.slot_of: dict[Value, int] = {p: i for i, p in enumerate(fn.params)}
        self.n_slots = self.n_params
        self.constants: dict[int, np.ndarray] = {}
        self._const_slots: dict = {}
        self.producer: dict[Value, Op] = {}
        self.def_glue: dict[Value, _Glue] = {}
        self.ys_rows: dict[Value, list[int]] = {}  # a scan's ys: one slot per row
        self.deferred: dict[Value, Op] = {}  # stacks built only if read whole
        self.rows_cache: dict[Value, list] = {}
        self.programs: list[Function] = []
        self.kinds: list[str] = []
        self.launches: list[Launch] = []
        self.glues: list[_Glue] = []
        self.bodies: list[dict] = []
        self.kept: list[dict] = []  # top-level scans left whole inside a program, and why
        self.row_reads: dict[Value, tuple] = {}  # a top-level row read -> (its row, shape)

    # --- slots ----------------------------------------------------------------------------
    def new_slot(self) -> int:
        self.n_slots += 1
        return self.n_slots - 1

    def const_slot(self, value: np.ndarray) -> int:
        value = np.array(value)  # a copy of its own (0-d stays 0-d)
        key = (value.dtype.str, value.shape, value.tobytes())
        if key not in self._const_slots:
            s = self.new_slot()
            self.constants[s] = value
            self._const_slots[key] = s
        return self._const_slots[key]

    def slot(self, v: Value) -> int:
        """The slot holding `v` (a top-level value) for a later launch."""
        if v in self.slot_of:
            return self.slot_of[v]
        if v in self.ys_rows:
            raise Refused(f"a rolled loop's stacked output {v.type} is read whole")
        op = self.producer.get(v)
        if op is not None and op.name == "constant":
            s = self.const_slot(np.asarray(op.attrs["value"]).reshape(v.type.shape))
        else:
            g = self.def_glue[v]
            s = self.new_slot()
            g.exports.append((self.local(v, g), s))
        self.slot_of[v] = s
        return s

    def ref_slot(self, ref) -> int:
        return ref if isinstance(ref, int) else self.slot(ref)

    def local(self, v: Value, g: _Glue) -> Value:
        """`v` as a value of glue program `g`: its own, a constant cloned, or a parameter."""
        if v in g.env:
            return g.env[v]
        op = self.producer.get(v)
        if op is not None and op.name == "constant":
            c = Op("constant", [], dict(op.attrs), [Value(v.type)])
            g.ops.append(c)
            g.env[v] = c.results[0]
            return g.env[v]
        if v in self.deferred and self.def_glue[v] is g:  # a stack read whole: built here
            d = self.deferred.pop(v)
            new = d.rebuilt([self.local(u, g) for u in d.operands], d.regions)
            if new is d:
                new = Op(d.name, d.operands, d.attrs, [Value(r.type) for r in d.results])
            g.ops.append(new)
            g.env[v] = new.results[0]
            return g.env[v]
        if v in self.deferred:
            self.local(v, self.def_glue[v])
        return g.param_for(self.slot(v), v.type)

    def ref_local(self, ref, t, g: _Glue) -> Value:
        return g.param_for(ref, t) if isinstance(ref, int) else self.local(ref, g)

    # --- stacks read as rows --------------------------------------------------------------
    def rows(self, v: Value, consts: bool = False) -> list | None:
        """Row refs of a stack (a slot, or a top-level value holding the row), or None.
        A constant has rows only for a loop (`consts`: each row a buffer made once); read
        elsewhere it stays a constant of its program."""
        if v in self.ys_rows:
            return self.ys_rows[v]
        if v in self.rows_cache:
            return self.rows_cache[v]
        op = self.producer.get(v)
        out = None
        if op is None or v.type.rank == 0:
            return None
        row_t = v.type.shape[1:]
        if op.name == "concatenate" and op.attrs.get("dimension") == 0:
            if all(u.type.rank == v.type.rank and u.type.shape[0] == 1 for u in op.operands):
                g = self.def_glue[v]
                out = [self._row_value(u, row_t, g) for u in op.operands]
        elif op.name == "constant":
            if not consts:
                return None
            value = np.asarray(op.attrs["value"]).reshape(v.type.shape)
            out = [self.const_slot(value[k]) for k in range(v.type.shape[0])]
        elif op.name == "slice" and _leading_slice(op):
            src = self.rows(op.operands[0], consts)
            if src is not None:
                a, b = op.attrs["start_indices"][0], op.attrs["limit_indices"][0]
                out = src[a:b]
        self.rows_cache[v] = out
        return out

    def _row_value(self, u: Value, row_shape: tuple, g: _Glue):
        """The value holding row `u` (of shape `[1, *row_shape]`) of a stack being built in
        glue program `g` (a reshape of `u` there, unless `u` is one)."""
        op = self.producer.get(u)
        if op is not None and op.name == "reshape" and op.operands[0].type.shape == row_shape:
            return op.operands[0]
        r = Op.inferred("reshape", [self.local(u, g)], {"shape": list(row_shape)})
        g.ops.append(r)
        row = Value(r.results[0].type)
        self.producer[row] = r
        self.def_glue[row] = g
        g.env[row] = r.results[0]
        return row

    def is_stack_op(self, op: Op) -> bool:
        """A stack that is built only if read whole (rows are read from its operands)."""
        if op.name == "concatenate":
            return self.rows(op.results[0]) is not None
        if op.name == "slice" and _leading_slice(op):
            return self.rows(op.operands[0]) is not None
        return False

    def row_read(self, op: Op) -> int | None:
        """The row a top-level `dynamic_slice` / `slice` of one whole row of a stack reads."""
        if self.rows(op.operands[0]) is None:
            return None
        return _row_index(op, self.producer.get)

    # --- a scan: its body launched once per trip ------------------------------------------
    def why_not_split(self, op: Op, readers: dict) -> str | None:
        """Why a top-level scan stays whole (one op of a glue program), or None: an xs not
        made of rows (a stack the program was given or computed), or a stacked output
        that something reads other than as rows (returned, or read whole by an op)."""
        nc, ncar = int(op.attrs["num_consts"]), int(op.attrs["num_carry"])
        for x in op.operands[nc + ncar :]:
            if self.rows(x, consts=True) is None:
                made = self.producer.get(x)
                what = made.name if made is not None else "an argument of the program"
                return f"its xs {x.type} is a stack made by {what}, not rows"
        for v in op.results[ncar:]:
            for r in readers.get(v, ()):
                if r is None:
                    return f"its stacked output {v.type} is returned whole"
                if r.name == "scan" or (r.name == "slice" and _leading_slice(r)):
                    continue
                if r.name == "dynamic_slice" and r.operands[0] is v:
                    sizes = list(r.attrs["slice_sizes"])
                    if sizes == [1, *v.type.shape[1:]] and (
                        _int_of(r.operands[1], self.all_made.get) is not None
                    ):
                        continue
                return f"its stacked output {v.type} is read whole by `{r.name}`"
        return None

    def scan(self, op: Op) -> None:
        a = op.attrs
        n, nc, ncar = int(a["length"]), int(a["num_consts"]), int(a["num_carry"])
        if n < 1:
            raise Refused("a rolled loop of no trips")
        body = op.regions[0]
        consts, init, xs = op.operands[:nc], op.operands[nc : nc + ncar], op.operands[nc + ncar :]
        cp, carp, xp = body.params[:nc], body.params[nc : nc + ncar], body.params[nc + ncar :]
        xs_rows = []
        for x in xs:
            rows = self.rows(x, consts=True)
            if rows is None:
                made = self.producer.get(x)
                what = made.name if made is not None else "an argument of the program"
                raise Refused(f"a rolled loop's xs {x.type} is a stack made by {what}, not rows")
            xs_rows.append(rows)
        made = {r: o for o in body.ops for r in o.results}
        xs_const = {p: self.producer.get(x) for p, x in zip(xp, xs)}

        def at_trip(v: Value, t: int) -> int | None:
            """The integer body value `v` holds on trip t, when known."""
            c = xs_const.get(v)
            if c is not None and c.name == "constant" and _is_int_scalar(v):
                return int(np.asarray(c.attrs["value"]).reshape(-1)[t])
            return _int_of(v, made.get)

        ts = list(range(n - 1, -1, -1)) if a["reverse"] else list(range(n))
        # a loop constant the body reads only as whole rows at indices known per trip
        by_rows: dict[int, list[Op]] = {}
        for j, (p, c) in enumerate(zip(cp, consts)):
            uses = [o for o in body.ops if p in o.operands]
            rows = self.rows(c, consts=True)
            ok = rows is not None and p not in body.results
            for o in uses if ok else ():
                ok = (
                    o.name == "dynamic_slice"
                    and o.operands[0] is p
                    and p not in o.operands[1:]
                    and list(o.attrs["slice_sizes"]) == [1, *p.type.shape[1:]]
                    and all(at_trip(o.operands[1], t) is not None for t in ts)
                )
                if not ok:
                    break
            if ok:
                by_rows[j] = uses
            elif c in self.ys_rows:
                raise Refused(
                    f"a rolled loop reads an earlier loop's stacked output {c.type} other "
                    "than by whole rows at indices known per trip"
                )
        # the body's program: loop constants (those read by rows: a row per read), carry, xs
        sources: list = []  # per parameter: a slot, or ("carry", k), or a list of refs per t
        params: list[Value] = []
        replaced: dict[int, Op] = {}
        row_of: dict[Value, Value] = {}  # a row read's result -> the parameter it became
        for j, p in enumerate(cp):
            if j in by_rows:
                rows = self.rows(consts[j], consts=True)
                for o in by_rows[j]:
                    row = Value(TensorType(p.type.shape[1:], p.type.dtype))
                    replaced[id(o)] = Op("reshape", [row], {"shape": list(o.attrs["slice_sizes"])},
                                         [o.results[0]])  # fmt: skip
                    last = len(rows) - 1
                    refs = {t: rows[min(max(at_trip(o.operands[1], t), 0), last)] for t in ts}
                    params.append(row)
                    sources.append(refs)
                    row_of[o.results[0]] = row
            else:
                params.append(p)
                sources.append(self.slot(consts[j]))
        for k, p in enumerate(carp):
            params.append(p)
            sources.append(("carry", k))
        for j, p in enumerate(xp):
            params.append(p)
            rows = xs_rows[j]
            sources.append({t: rows[t] for t in ts})
        ops = [replaced.get(id(o), o) for o in body.ops]
        ops, picked = _picked_on_host(ops, params, sources, row_of, made, at_trip, ts)
        live = set(body.results)
        kept_ops = []
        for o in reversed(ops):  # what the picks and row reads left unread
            if any(r in live for r in o.results):
                kept_ops.append(o)
                live.update(o.operands)
        ops = kept_ops[::-1]
        carry, ys_of, runs = launch_runs(
            self, Launch, body.name, params, sources, ops, list(body.results), ncar, ts,
            [self.slot(v) for v in init], self.per_run,
        )  # fmt: skip
        ys = [[y[t] for t in range(n)] for y in ys_of]
        for k in range(ncar):
            self.slot_of[op.results[k]] = carry[k]
        for m, v in enumerate(op.results[ncar:]):
            self.ys_rows[v] = ys[m]
        rows_read = sum(map(len, by_rows.values()))
        self.bodies.append(
            {"trips": n, "reverse": bool(a["reverse"]), "rows_read": rows_read,
             "picked_on_host": picked, **runs, "loc": op.loc}
        )  # fmt: skip

    # --- the whole program ----------------------------------------------------------------
    def new_glue(self) -> _Glue:
        g = _Glue(len(self.glues))
        self.glues.append(g)
        g.launch = Launch(-1, [], [])
        self.launches.append(g.launch)
        return g

    def top_level(self, op: Op, g: _Glue) -> None:
        for r in op.results:
            self.producer[r] = op
            self.def_glue[r] = g
        if op.name == "constant":
            return  # cloned into each program that reads it
        if op.name in ("dynamic_slice", "slice"):
            k = self.row_read(op)
            if k is not None:
                x = op.operands[0]
                row_t = TensorType(x.type.shape[1:], x.type.dtype)
                ref = self.rows(x)[k]
                row = self.ref_local(ref, row_t, g)
                out = op.results[0]
                self.row_reads[out] = (ref, row_t.shape)
                r = Op("reshape", [row], {"shape": list(out.type.shape)}, [Value(out.type)])
                g.ops.append(r)
                g.env[out] = r.results[0]
                return
        if self.is_stack_op(op):
            self.deferred[op.results[0]] = op
            return
        if op.name == "reshape" and op.operands[0] in self.row_reads:
            ref, shape = self.row_reads[op.operands[0]]
            if tuple(op.results[0].type.shape) == tuple(shape):  # the row's buffer as is
                self.slot_of[op.results[0]] = self.ref_slot(ref)
                return
        for u in op.operands:
            if u in self.ys_rows:
                raise Refused(f"`{op.name}` reads a rolled loop's stacked output {u.type} whole")
        new = Op(op.name, [self.local(u, g) for u in op.operands], op.attrs,
                 [Value(r.type) for r in op.results], op.regions, op.loc)  # fmt: skip
        g.ops.append(new)
        g.env.update(zip(op.results, new.results))

    def run(self) -> Split:
        fn = self.fn
        for op in fn.ops:
            if has_effect(op):
                raise Refused(f"`{op.name}` has effects (a callback, a collective, or not pure)")
        if not any(op.name == "scan" for op in fn.ops):
            raise Refused("no rolled loop at the top level of the program")
        g = self.new_glue()
        self.all_made = {r: o for o in fn.ops for r in o.results}
        readers: dict[Value, list] = {}
        for op in fn.ops:
            for u in op.operands:
                readers.setdefault(u, []).append(op)
        for v in fn.results:
            readers.setdefault(v, []).append(None)
        for op in fn.ops:
            why = self.why_not_split(op, readers) if op.name == "scan" else None
            if op.name == "scan" and why is None:
                for r in op.results:
                    self.producer[r] = op
                self.scan(op)
                g = self.new_glue()
            else:
                if why is not None:
                    self.kept.append({"reason": why, "loc": op.loc})
                self.top_level(op, g)
        if not self.bodies:
            raise Refused("no loop could be split: " + "; ".join(k["reason"] for k in self.kept))
        results = [self.slot(v) for v in fn.results]
        copies = [
            i for i, s in enumerate(results)
            if s < self.n_params or s in self.constants or results.index(s) != i
        ]  # fmt: skip
        for g in self.glues:
            self._finish_glue(g)
        if copies:  # a parameter, a constant or a repeated result: a fresh buffer of its own
            ps = [Value(fn.results[i].type) for i in copies]
            self.programs.append(Function(f"{fn.name}_copy", ps, [], ps))
            self.kinds.append("copy")
            outs = [self.new_slot() for _ in copies]
            self.launches.append(Launch(len(self.programs) - 1, [results[i] for i in copies], outs))
            for i, s in zip(copies, outs):
                results[i] = s
        self.launches = [L for L in self.launches if L.program >= 0]
        self._plan_buffers(results)
        results = self._renumber(results)
        report = {
            "programs": len(self.programs),
            "glue_programs": self.kinds.count("glue"),
            "launches": len(self.launches),
            "loops": self.bodies,
            "copies": len(copies),
            "kept": self.kept,
        }
        return Split(self.programs, self.kinds, self.launches, self.n_slots, self.n_params,
                     self.constants, results, report)  # fmt: skip

    def _finish_glue(self, g: _Glue) -> None:
        """`g` as a program: its ops that make what later launches read (the rest dropped)."""
        live = {v for v, _ in g.exports}
        kept = []
        for o in reversed(g.ops):
            if any(r in live for r in o.results):
                kept.append(o)
                live.update(o.operands)
        params = [(s, p) for s, p in g.params if p in live]
        if not g.exports:
            return  # nothing read later: no launch (its launch stays a placeholder)
        self.programs.append(
            Function(f"{self.fn.name}_glue{g.index}", [p for _, p in params], kept[::-1],
                     [v for v, _ in g.exports])
        )  # fmt: skip
        self.kinds.append("glue")
        g.launch.program = len(self.programs) - 1
        g.launch.ins = [s for s, _ in params]
        g.launch.outs = [s for _, s in g.exports]

    def _plan_buffers(self, results: list[int]) -> None:
        """Each launch's slots read for the last time (dropped after it) and the donated entry
        parameters it reads last (their buffers taken over; a loop body's, at the positions
        donated on all its launches)."""
        last: dict[int, int] = {}
        for li, launch in enumerate(self.launches):
            for s in launch.ins:
                last[s] = li
        keep = set(results) | set(self.constants)
        for li, launch in enumerate(self.launches):
            free = {s for s in launch.ins if last[s] == li} | {
                s for s in launch.outs if s not in last
            }
            launch.free = tuple(sorted(free - keep))
            launch.donate = tuple(
                i for i, s in enumerate(launch.ins)
                if self.kinds[launch.program] != "copy" and s < self.n_params
                and self.donated[s] and last[s] == li
                and launch.ins.count(s) == 1 and s not in keep
            )  # fmt: skip
        # one executable per program: a position donated on every one of its launches
        common: dict[int, set] = {}
        for launch in self.launches:
            d = set(launch.donate)
            common[launch.program] = common.get(launch.program, d) & d
        for launch in self.launches:
            launch.donate = tuple(sorted(common[launch.program]))

    def _renumber(self, results: list[int]) -> list[int]:
        """Slots renumbered so that each launch's outputs are consecutive (written with one
        slice assignment): the parameters first, then the constants, then each launch's
        outputs in launch order. Returns `results` renumbered."""
        new = {s: s for s in range(self.n_params)}
        for s in self.constants:
            new[s] = len(new)
        for launch in self.launches:
            for s in launch.outs:
                new[s] = len(new)
        self.n_slots = len(new)
        for launch in self.launches:
            launch.ins = [new[s] for s in launch.ins]
            launch.outs = [new[s] for s in launch.outs]
            launch.free = tuple(new[s] for s in launch.free)
        self.constants = {new[s]: v for s, v in self.constants.items()}
        return [new[s] for s in results]


def split(fn: Function, donated, per_run: int = 1) -> Split:
    """`fn` (a rolled program after the pipeline) as programs and launches (module
    docstring); `donated`: per entry parameter, whether the caller gives its buffer away;
    `per_run`: trips of a loop per launch (`_compose.py`). Raises `Refused` with the reason
    when the program cannot be split."""
    fn, merged = merge_same_rows(fn)
    fn, folded = fold_rows(fn)
    s = _Splitter(fn, list(donated) or [False] * len(fn.params), per_run).run()
    s.report["folded"] = folded
    if merged:
        s.report["merged"] = merged
    return s
