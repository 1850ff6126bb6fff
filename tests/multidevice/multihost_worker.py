"""One process of the two-process shard_map test (started by test_md_multihost.py).

    python multihost_worker.py COORDINATOR_ADDRESS PROCESS_ID
Each process has 4 forced CPU devices (XLA_FLAGS set by the parent): 8 devices in all.
Prints "WORKER OK <process id>" when every check passed.
"""

import sys

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import distributed, lax
from purejit.sharding import Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P


def main(address: str, pid: int):
    distributed.initialize(address, num_processes=2, process_id=pid, initialization_timeout=60)
    assert distributed.process_index() == pid and distributed.process_count() == 2
    devs = purejit.devices()
    local = distributed.local_devices()
    assert len(devs) == 8 and len(local) == 4, (devs, local)
    mesh = Mesh(np.array(devs).reshape(2, 4), ("host", "local"))
    x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)  # the same global value everywhere
    xs = purejit.device_put(x, NamedSharding(mesh, P(("host", "local"))))
    assert {s.device for s in xs.buffer.addressable_shards} == set(local)

    def body(b):  # b: [1, 3] on each device
        total = lax.psum(b, ("host", "local"))  # crosses the process boundary
        ring = lax.ppermute(b, ("host", "local"), [(k, (k + 1) % 8) for k in range(8)])
        gathered = lax.all_gather(b, "host", tiled=True)  # [2, 3]: from both processes
        return total, ring, gathered, jnp.tanh(b) * 2

    f = purejit.jit(
        purejit.shard_map(
            body,
            mesh=mesh,
            in_specs=P(("host", "local")),
            out_specs=(P(), P(("host", "local")), P("local"), P(("host", "local"))),
            check_vma=False,  # all_gather's result is typed varying over "host", as in JAX
        )
    )
    total, ring, gathered, local_math = f(xs)
    np.testing.assert_allclose(np.asarray(total), x.sum(0, keepdims=True), rtol=1e-6)
    rolled = np.roll(x, 1, axis=0)
    for arr, want in ((ring, rolled), (local_math, np.tanh(x) * 2)):
        for s in arr.buffer.addressable_shards:
            np.testing.assert_allclose(np.asarray(s.data), want[s.index], rtol=1e-6)
    # device (host=h, local=l) holds rows h*4+l; gathering over "host" gives rows [l, 4+l]
    for s in gathered.buffer.addressable_shards:
        l_idx = s.index[0].start // 2
        np.testing.assert_allclose(np.asarray(s.data), x[[l_idx, 4 + l_idx]], rtol=1e-6)
    print(f"WORKER OK {pid}", flush=True)
    distributed.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
