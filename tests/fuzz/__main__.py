"""`python -m tests.fuzz --n 5000 [--seed S] [--save DIR]`: run many random programs.

A failing program is shrunk by Hypothesis to a minimal one (the failure propagates out of
the test function, so Hypothesis sees it), printed as source, and with `--save DIR` written
as a regression file (`regress.save`: the program, its IR, inputs and JAX's numbers) that
`test_fuzz.py` replays once it is moved into `tests/fuzz/regressions/`. The run then goes on
with the next seed until `--n` programs were drawn or `--max-failures` were found.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from . import regress
from .check import check
from .ops import SPECS
from .program import programs


def _key(e: BaseException) -> str:
    lines = str(e).splitlines() or [""]
    return f"{type(e).__name__}: {lines[0][:200]}"


def run_round(
    n: int, seed_: int, passes: bool, seen: collections.Counter, stop_at: float, verbose=False
):
    """Draw up to `n` programs (checking none after time `stop_at`); returns (programs
    checked before a failure, the shrunk failing program and its exception, or None)."""
    state = {"drawn": 0, "failing": None, "failed": False}

    @settings(
        max_examples=n,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @seed(seed_)
    @given(st.sampled_from(sorted(SPECS)).flatmap(lambda name: programs(first=name)))
    def one(prog):
        if not state["failed"] and time.time() > stop_at:
            return
        if not state["failed"]:
            state["drawn"] += 1
            if verbose:  # the program about to run, so that a hang names it
                print(f"checking {prog.to_json()}", flush=True)
            for name, _, _ in prog.ops:
                seen[name] += 1
        try:
            check(prog, passes=passes)
        except Exception as e:
            if not state["failed"]:  # reported at once: shrinking may take minutes
                print(f"\n-- found (shrinking): {_key(e)}\n{prog.to_json()}", flush=True)
            # the last failing call Hypothesis makes is its shrunk example
            state["failed"] = True
            state["failing"] = (prog, e)
            raise

    try:
        one()
    except Exception:  # noqa: BLE001 - reported by the caller from state["failing"]
        if state["failing"] is None:
            raise
    return state["drawn"], state["failing"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--n", type=int, default=1000, help="programs to draw (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="Hypothesis seed of the first round")
    ap.add_argument("--no-passes", action="store_true", help="skip the pass variants")
    ap.add_argument("--save", metavar="DIR", help="write each shrunk failure there (JSON)")
    ap.add_argument("--max-failures", type=int, default=10, help="stop after this many")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop checking then")
    ap.add_argument("--verbose", action="store_true", help="print each program first")
    args = ap.parse_args(argv)
    failures: list = []
    seen: collections.Counter = collections.Counter()
    t0 = time.time()
    stop_at = t0 + args.max_seconds if args.max_seconds else float("inf")
    drawn, round_ = 0, 0
    while drawn < args.n and len(failures) < args.max_failures:
        got, failing = run_round(
            args.n - drawn,
            args.seed + 1000 * round_,
            not args.no_passes,
            seen,
            stop_at,
            args.verbose,
        )
        drawn += max(got, 1)
        round_ += 1
        if failing is None:
            break
        prog, err = failing
        failures.append((prog, err))
        print(f"\n== failure {len(failures)} after {drawn} programs: {_key(err)}")
        print(prog.source())
        print(prog.to_json(), flush=True)
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            name = f"seed{args.seed}_{len(failures)}_{prog.ops[0][0]}"
            try:
                path = regress.save(prog, name, f"{_key(err)}", directory=args.save)
                print(f"saved {path}")
            except Exception as e:  # noqa: BLE001 - a program JAX or tracing rejects
                print(f"not saved ({_key(e)})")
    dt = time.time() - t0
    print(
        f"\n{drawn} programs checked in {dt:.0f} s; ops applied {sum(seen.values())}; "
        f"ops never drawn: {sorted(set(SPECS) - set(seen)) or 'none'}"
    )
    kinds = collections.Counter(_key(e) for _, e in failures)
    print(f"{len(failures)} failing programs, {len(kinds)} kinds")
    for k, c in kinds.most_common():
        print(f"  {c} x {k}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
