"""`python -m purejit info` (versions, backend, devices) and `python -m purejit demo`."""

from __future__ import annotations

import argparse
import sys


def _fmt_bytes(n) -> str:
    if n is None:
        return "n/a"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return str(n)


def info(out=None) -> None:
    """Print purejit's, jax's, jaxlib's and StableHLO's versions, the backend and devices.

    Args:
        out: a text stream (default: sys.stdout at call time).
    """
    out = out or sys.stdout
    import platform

    import numpy as np

    import purejit
    from purejit.backend import info as binfo

    v = binfo.versions()
    print(f"purejit    {purejit.__version__}", file=out)
    print(f"python     {platform.python_version()}", file=out)
    print(f"numpy      {np.__version__}", file=out)
    print(f"jax        {v['jax']}", file=out)
    print(f"jaxlib     {v['jaxlib']}", file=out)
    print(f"stablehlo  {v['stablehlo']} (portable artifacts down to {v['stablehlo_minimum']})",
          file=out)  # fmt: skip
    b = binfo.backend_summary()
    print(f"backend    {b['platform']} ({b['platform_version']}), {b['device_count']} device(s)",
          file=out)  # fmt: skip
    print(f"x64        {'on' if purejit.config.enable_x64 else 'off'}", file=out)
    for d in binfo.device_summaries():
        mem = (
            f"memory {_fmt_bytes(d['bytes_in_use'])} used of {_fmt_bytes(d['bytes_limit'])}"
            if d["bytes_limit"] is not None
            else "memory: not reported by this backend"
        )
        print(f"  device {d['id']}: {d['platform']} {d['kind']}, {mem}", file=out)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m purejit`."""
    parser = argparse.ArgumentParser(prog="python -m purejit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, backend and devices")
    sub.add_parser("demo", help="a short tour: compile a small MLP, show IR and timings")
    args = parser.parse_args(argv)
    if args.command == "info":
        info()
    else:
        from purejit import demo

        demo.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
