"""Versions and devices, for `python -m purejit info`: the one place it asks jax/jaxlib."""

from __future__ import annotations


def versions() -> dict[str, str]:
    """Versions of jax, jaxlib and the StableHLO dialect that jaxlib's bindings carry.

    Returns:
        A dict with keys `jax`, `jaxlib`, `stablehlo` (current) and `stablehlo_minimum`
        (the oldest version a portable artifact may target); a key whose value cannot be
        read says `unknown`.
    """
    import jax
    import jaxlib

    out = {"jax": jax.__version__, "jaxlib": jaxlib.__version__}
    try:
        from jaxlib.mlir.dialects import stablehlo

        out["stablehlo"] = str(stablehlo.get_current_version())
        out["stablehlo_minimum"] = str(stablehlo.get_minimum_version())
    except (ImportError, AttributeError):
        out["stablehlo"] = out["stablehlo_minimum"] = "unknown"
    return out


def backend_summary() -> dict:
    """The default PJRT backend: platform name, platform version and device count."""
    from jax.extend.backend import get_backend

    b = get_backend()
    return {
        "platform": b.platform,
        "platform_version": str(getattr(b, "platform_version", "unknown")),
        "device_count": b.device_count(),
    }


def device_summaries() -> list[dict]:
    """One dict per visible device: id, platform, kind and memory (bytes) where PJRT has it.

    `bytes_limit` / `bytes_in_use` come from `device.memory_stats()`, which GPUs and TPUs
    report and the CPU backend does not (they are None there).
    """
    import jax

    out = []
    for d in jax.devices():
        try:
            stats = d.memory_stats() or {}
        except (RuntimeError, NotImplementedError):
            stats = {}
        out.append(
            {
                "id": d.id,
                "platform": d.platform,
                "kind": d.device_kind,
                "bytes_limit": stats.get("bytes_limit"),
                "bytes_in_use": stats.get("bytes_in_use"),
            }
        )
    return out
