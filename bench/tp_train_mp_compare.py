"""`bench.tp_train_mp`'s comparison of an N-process job with the one-process reference: the
parameters assembled from the shards each process wrote (`bench.tp_train_mp_worker`), the
losses, the step times and the compiled HLO. NumPy only: the parent starts no backend."""

from __future__ import annotations

import difflib
import os

import ml_dtypes
import numpy as np

DIFF_LINES = 12  # of the HLO's unified diff, in the notes


def assemble(paths: list[str], shapes: list[list[int]]) -> tuple[list, int, int]:
    """The global leaves (raw bits) from the shard files of every process.

    Returns the leaves, how many shards held by several processes (replicas) differed from
    the first copy, and how many rows no process held (both 0 expected)."""
    leaves = [None] * len(shapes)
    seen = [np.zeros(s[0] if s else 1, np.int32) for s in shapes]
    differing = 0
    for path in paths:
        with np.load(path) as z:
            for key in z.files:
                k, start = (int(v) for v in key[1:].split("_"))
                part = z[key]
                if leaves[k] is None:
                    leaves[k] = np.zeros(shapes[k], part.dtype)
                rows = slice(start, start + (len(part) if part.ndim else 1))
                if seen[k][rows].any():  # a replica: it must equal the copy kept
                    differing += int(not np.array_equal(leaves[k][rows], part))
                else:
                    leaves[k][rows] = part
                seen[k][rows] += 1
    missing = sum(int((s == 0).sum()) for s in seen)
    return leaves, differing, missing


def as_float(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Float32 values of raw bits written by the worker (bfloat16 travels as uint16)."""
    if dtype == "bfloat16":
        return bits.view(ml_dtypes.bfloat16).astype(np.float32)
    return bits.astype(np.float32)


def hlo_difference(a: str, b: str) -> str | None:
    """None when the two compiled HLO texts are equal, else how many lines differ and, for the
    first few, the differing part of each (the common start and end of the line cut)."""
    if a == b:
        return None
    la, lb = a.splitlines(), b.splitlines()
    shown, changed = [], 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        changed += max(i2 - i1, j2 - j1)
        for k in range(max(i2 - i1, j2 - j1)):
            if len(shown) < DIFF_LINES:
                u = la[i1 + k] if i1 + k < i2 else ""
                v = lb[j1 + k] if j1 + k < j2 else ""
                shown.append(f"line {i1 + k + 1}: {_differing_part(u, v)}")
    return f"{changed} lines differ (one process -> N processes):\n" + "\n".join(shown)


def _differing_part(u: str, v: str, context: int = 50) -> str:
    start = 0
    while start < min(len(u), len(v)) and u[start] == v[start]:
        start += 1
    end = 0
    while end < min(len(u), len(v)) - start and u[-1 - end] == v[-1 - end]:
        end += 1
    lo = max(start - context, 0)
    return f"...{u[lo : len(u) - end]}  ->  ...{v[lo : len(v) - end]}"


def psum_probe_note(values: np.ndarray, single: list, multi: list[list]) -> str | None:
    """A note on the psum probe (`bench.tp_train_mp_worker.psum_probe_values` summed over the
    devices) when the N-process job's sums differ from the one process's, else None."""
    one, each = np.asarray(single, np.float32), [np.asarray(m, np.float32) for m in multi]
    differ = int((one != each[0]).sum())
    if not differ and all(np.array_equal(e, each[0]) for e in each):
        return None
    in_order = values[0].copy()
    for row in values[1:]:  # device 0 first, then 1, 2, ...: float32 at every step
        in_order = in_order + row
    agree = [int((x == in_order).sum()) for x in (one, each[0])]
    return (
        f"the psum probe ({values.shape[1]} sums of values of mixed magnitudes over the "
        f"{values.shape[0]} devices) differs in {differ} sums between one process and N "
        f"processes: the collective adds in another order (sums equal to adding device 0, "
        f"1, 2, ... in turn: {agree[0]} in one process, {agree[1]} in N processes)"
        + ("" if all(np.array_equal(e, each[0]) for e in each) else "; the processes disagree")
    )


def _read(path: str) -> str | None:
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        return fh.read()


def compare_kind(kind: str, single_dir: str, multi_dir: str, single: dict, multi: list) -> dict:
    """Compare the step `kind` of the reference (`single`: its process0.json record) with
    the job (`multi`: one record per process). Returns what the table shows, with `notes`
    naming every difference found."""
    s_rec, m_recs = single["steps"][kind], [m["steps"][kind] for m in multi]
    shapes, dtype = s_rec["shapes"], single["dtype"]
    ref, ref_rep, ref_missing = assemble([os.path.join(single_dir, f"{kind}_process0.npz")], shapes)
    paths = [os.path.join(multi_dir, f"{kind}_process{k}.npz") for k in range(len(multi))]
    got, got_rep, got_missing = assemble(paths, shapes)
    notes = []
    if ref_missing or got_missing:
        notes.append(f"rows missing: {ref_missing} (one process), {got_missing} (N processes)")
    replicas = got_rep + sum(m["local_replicas_differing"] for m in m_recs)
    if replicas or ref_rep or s_rec["local_replicas_differing"]:
        notes.append(
            f"replicated parameters differ between devices: {replicas} shards (N processes), "
            f"{ref_rep + s_rec['local_replicas_differing']} (one process)"
        )
    bit_equal = all(np.array_equal(a, b) for a, b in zip(ref, got))
    diffs = [float(np.abs(as_float(a, dtype) - as_float(b, dtype)).max()) for a, b in zip(ref, got)]
    max_diff = max(diffs)
    if not bit_equal:
        worst = int(np.argmax(diffs))
        unequal = sum(int((a != b).sum()) for a, b in zip(ref, got))
        total = sum(a.size for a in ref)
        notes.append(
            f"{unequal} of {total} parameter values differ; the largest difference is in "
            f"leaf {worst} {shapes[worst]}"
        )
    losses = [m["losses"] for m in m_recs]
    losses_equal = all(ls == s_rec["losses"] for ls in losses)
    if not losses_equal:
        first = next(
            (i for i, (a, b) in enumerate(zip(s_rec["losses"], losses[0])) if a != b), None
        )
        a, b = s_rec["losses"], losses[0]
        notes.append(
            f"losses differ from step {first}: {a[first]!r} (one process) against {b[first]!r} "
            f"(N processes); at the last step {a[-1]!r} against {b[-1]!r}"
            + ("" if all(ls == losses[0] for ls in losses) else "; the processes disagree")
        )
    for who, recs in (("one process", [s_rec]), ("N processes", m_recs)):
        rerun = sum(r["rerun_values_differing"] for r in recs)
        if rerun or not all(r["rerun_losses_equal"] for r in recs):
            notes.append(
                f"{who}: the same steps run again from the same start in the same process "
                f"end {rerun} parameter values apart: the step is not reproducible run to run "
                "on this device, so the two runs cannot be expected to agree bit for bit"
            )
    hlo = hlo_difference(
        _read(os.path.join(single_dir, f"{kind}_process0.hlo.txt")) or "",
        _read(os.path.join(multi_dir, f"{kind}_process0.hlo.txt")) or "",
    )
    if hlo is not None:
        notes.append(f"the compiled HLO differs:\n\n```\n{hlo}\n```")
    compiles = [s_rec["compiles"], *(m["compiles"] for m in m_recs)]
    if any(c != 1 for c in compiles):
        notes.append(f"compiles per process (1 expected): {compiles}")
    multi_step = max(m["step_s"] for m in m_recs)
    return {
        "params_bit_equal": bit_equal,
        "max_abs_param_diff": max_diff,
        "losses_equal": losses_equal,
        "last_loss": s_rec["losses"][-1] if s_rec["losses"] else float("nan"),
        "single_losses": s_rec["losses"],
        "multi_losses": losses[0],
        "single_step_s": s_rec["step_s"],
        "multi_step_s": multi_step,
        "multi_step_s_each": [m["step_s"] for m in m_recs],
        "multi_vs_single": multi_step / s_rec["step_s"],
        "single_compile_s": s_rec["compile_s"],
        "multi_compile_s": max(m["compile_s"] for m in m_recs),
        "temp_bytes": {"single": s_rec["temp_bytes"], "multi": m_recs[0]["temp_bytes"]},
        "argument_bytes": {"single": s_rec["argument_bytes"], "multi": m_recs[0]["argument_bytes"]},
        "same_hlo": hlo is None,
        "passed": bit_equal and losses_equal and not ref_missing and not got_missing,
        "notes": notes,
    }
