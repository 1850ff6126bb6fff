"""`python -m purejit info` (versions, backend, devices), `python -m purejit demo`, and
`python -m purejit run script.py [args]` (run a JAX program on purejit, unchanged)."""

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


def run(target: list[str]) -> int:
    """Run `target` (`script.py args...`, or `-m module args...`) as `python` would, with
    drop-in mode on: its `import jax` and its libraries' resolve to purejit."""
    import runpy

    import purejit.compat

    if not target or target[0] in ("-m",) and len(target) < 2:
        print("usage: python -m purejit run script.py [args] | -m module [args]", file=sys.stderr)
        return 2
    purejit.compat.install()
    if target[0] == "-m":
        sys.argv = target[1:]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    else:
        import os

        sys.argv = list(target)
        sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
        runpy.run_path(target[0], run_name="__main__")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m purejit`."""
    parser = argparse.ArgumentParser(prog="python -m purejit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, backend and devices")
    sub.add_parser("demo", help="a short tour: compile a small MLP, show IR and timings")
    run_p = sub.add_parser("run", help="run a JAX script on purejit (drop-in mode)")
    run_p.add_argument("target", nargs=argparse.REMAINDER, help="script.py [args] | -m module")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.target)
    if args.command == "info":
        info()
    else:
        from purejit import demo

        demo.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
