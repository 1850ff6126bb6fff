"""Multi-process runtime: the PJRT distributed service, through `jax.distributed`.

The only place purejit calls `jax.distributed`; `purejit.distributed` is the user API.
"""

from __future__ import annotations

from typing import Sequence


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: Sequence[int] | None = None,
    *,
    initialization_timeout: int = 300,
) -> None:
    """Join the distributed runtime (must run before any device is used in this process)."""
    import jax

    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
        local_device_ids=local_device_ids,
        initialization_timeout=initialization_timeout,
    )


def shutdown() -> None:
    import jax

    jax.distributed.shutdown()


def is_initialized() -> bool:
    import jax

    return jax.distributed.is_initialized()


def process_index() -> int:
    import jax

    return jax.process_index()


def process_count() -> int:
    import jax

    return jax.process_count()


def local_devices() -> list:
    import jax

    return list(jax.local_devices())


def kv_set(key: str, value: str) -> None:
    """Publish `value` under `key` in the distributed runtime's key-value store."""
    from jax._src import distributed as _dist

    _dist.global_state.client.key_value_set(key, value)


def kv_get(key: str, timeout_s: float = 300.0) -> str:
    """Wait for `key` in the key-value store (set by any process) and return its value."""
    from jax._src import distributed as _dist

    return _dist.global_state.client.blocking_key_value_get(key, int(timeout_s * 1000))
