"""`python -m tests.fuzz --n 5000`: run many random programs, report failures by kind.

Each failure is shrunk by Hypothesis to a minimal program, printed as source, and (with
`--save DIR`) written as a regression candidate.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from .check import check
from .ops import SPECS
from .program import programs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--n", type=int, default=1000, help="programs to run (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="Hypothesis seed")
    ap.add_argument("--no-passes", action="store_true", help="skip the pass variants")
    args = ap.parse_args(argv)
    failures: dict[str, list] = collections.defaultdict(list)
    seen = collections.Counter()
    t0 = time.time()

    @settings(
        max_examples=args.n,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @seed(args.seed)
    @given(st.sampled_from(sorted(SPECS)).flatmap(lambda n: programs(first=n)))
    def one(prog):
        for name, _, _ in prog.ops:
            seen[name] += 1
        try:
            check(prog, passes=not args.no_passes)
        except Exception as e:  # noqa: BLE001 - every kind of failure is a finding
            key = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            failures[key].append(prog)

    one()
    dt = time.time() - t0
    print(
        f"{args.n} programs in {dt:.0f} s; ops applied {sum(seen.values())}; "
        f"ops never drawn: {sorted(set(SPECS) - set(seen)) or 'none'}"
    )
    print(f"{sum(map(len, failures.values()))} failing programs, {len(failures)} kinds")
    for key, progs in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        smallest = min(progs, key=lambda p: (len(p.ops), len(p.inputs)))
        print(f"\n== {len(progs)} x {key}\n{smallest.source()}\n{smallest.to_json()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
