"""One process of the fresh-process cache test (test_md_candidate_timing.py).

    python timing_cache_worker.py CACHE_DIR
Compiles a shard_map all-gather -> matmul with the collective-matmul pass in `auto` mode,
`cache_dir` set to CACHE_DIR, timings injected (the ring faster); prints one JSON line: how
many candidates were timed, the decisions' sources and how many rings were made.
"""

import json
import sys

import numpy as np

import purejit
from purejit import lax
from purejit.compiler import candidate_timing
from purejit.passes import Pipeline
from purejit.passes.collective_matmul import CollectiveMatmul
from purejit.passes.pipeline import default_passes
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P


def main(cache_dir: str):
    purejit.config.update("cache_dir", cache_dir)
    timed = []
    candidate_timing.time_pair = lambda plain, ring, budget, agree: timed.append(1) or (1.0, 0.5)
    mesh = Mesh(np.array(purejit.devices()), ("i",))
    f = purejit.jit(
        purejit.shard_map(
            lambda x, w: lax.all_gather(x, "i", tiled=True) @ w,
            mesh=mesh,
            in_specs=(P("i"), P()),
            out_specs=P(),
            check_vma=False,
        ),
        passes=Pipeline([CollectiveMatmul(), *default_passes()]),
    )
    x, w = np.ones((16, 8), np.float32), np.ones((8, 8), np.float32)
    low = f.lower(x, w)
    rep = next(r for r in low.records if r.name == "collective_matmul").report
    np.testing.assert_allclose(np.asarray(f(x, w)), x @ w)
    sources = [c["timed"] for c in rep["candidates"]]
    print(json.dumps({"timed": len(timed), "sources": sources, "rewritten": rep["rewritten"]}))


if __name__ == "__main__":
    main(sys.argv[1])
