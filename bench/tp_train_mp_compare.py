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
    """None when the two compiled HLO texts are equal, else the first lines of their diff."""
    if a == b:
        return None
    diff = difflib.unified_diff(a.splitlines(), b.splitlines(), "one process", "N processes", n=0)
    lines = [line[:200] for _, line in zip(range(DIFF_LINES), diff)]
    return "\n".join(lines)


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
        notes.append(
            f"losses differ from step {first}: one process {s_rec['losses']}, "
            f"process 0 {losses[0]}"
            + ("" if all(ls == losses[0] for ls in losses) else "; the processes disagree")
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
