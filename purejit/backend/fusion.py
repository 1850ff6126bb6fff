"""Whether purejit's `fusion` groups can be XLA's kernels here: the probe that decides the
route, emission with that route, and compiling with a fallback to the flat program.

Which route works depends on the jaxlib and the back end (measured: jaxlib 0.10.2 CPU takes
`mhlo.fusion` for single-result groups, and aborts the process on multi-result ones; the GPU
build rejects `mhlo.fusion` and does not fuse inside non-inlined calls). `probe_route` finds
out by compiling two tiny two-group programs and counting their kernels, never by reading a
version string. The routes themselves are in `fusion_routes.py`, their lowering in
`lowering/fusion.py`, kernel counting in `hlo_kernels.py`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

from purejit.backend import fusion_check, fusion_routes, pjrt, stablehlo
from purejit.backend.fusion_routes import (
    EXCLUDED_OPS,
    Capability,
    _warned,  # noqa: F401 - the warned-once keys; tests clear them
    warn_once,
    xla_fusion_pass,
)
from purejit.backend.hlo_kernels import Kernel, kernels  # noqa: F401 - Kernel: for callers
from purejit.backend.lowering.callback import host_callbacks
from purejit.config import config
from purejit.ir import Builder, Function, TensorType, all_ops


def _probe_function() -> Function:
    """Two single-result loop groups in a chain: sin(cos(x)) then tanh(y)*y + 1."""
    t = TensorType((256,), np.float32)

    def group(build):
        b = Builder("region")
        p = b.param(t)
        return b.finish([build(b, p)])

    def g1(b, p):
        return b.op("sine", [b.op("cosine", [p])[0]])[0]

    def g2(b, p):
        (h,) = b.op("tanh", [p])
        (one,) = b.op("constant", [], {"value": np.array(1.0, np.float32)})
        (ones,) = b.op("broadcast_in_dim", [one], {"shape": (256,), "broadcast_dimensions": ()})
        return b.op("add", [b.op("multiply", [h, p])[0], ones])[0]

    b = Builder("purejit_fusion_probe")
    x = b.param(t)
    (y,) = b.op("fusion", [x], {"kind": "loop"}, [group(g1)])
    (z,) = b.op("fusion", [y], {"kind": "loop"}, [group(g2)])
    return b.finish([z])


def _try_route(route: str, device) -> str | None:
    """None if `route` makes each of the probe's two groups one kernel with the right
    numbers; otherwise what went wrong."""
    from jax.errors import JaxRuntimeError  # jax loads on first compile, not on import

    fn = _probe_function()
    ctx = stablehlo.EmitContext()
    ctx.fusion_route = route
    text = stablehlo.emit(fn, ctx=ctx)
    disable = (xla_fusion_pass(device.platform),) if route == "mhlo.fusion" else ()
    try:
        exe = pjrt.compile(
            text, fn.param_types, fn.result_types, device=device, disable_xla_passes=disable
        )
    except JaxRuntimeError as e:  # the back end rejected the construct
        return f"{route} rejected: {str(e).splitlines()[0][:160]}"
    n = len(kernels(exe.hlo_text()))
    if n != 2:
        return f"{route}: 2 groups became {n} kernels"
    x = np.linspace(-2.0, 2.0, 256, dtype=np.float32)
    (out,) = exe.execute([pjrt.to_device(x, device)])
    y = np.sin(np.cos(x))
    if not np.allclose(np.asarray(out), np.tanh(y) * y + 1, rtol=1e-5, atol=1e-6):
        return f"{route}: wrong numbers"
    return None


def _check_in_child(platform: str, timeout: float = 300.0) -> tuple[str | None, list[str]]:
    """Run `fusion_check` in a child process. Returns (None, unsupported elementwise ops)
    if every kind of group compiled to one kernel with the right numbers, else (what
    happened, []); an abort only kills the child."""
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    cmd = [sys.executable, "-m", "purejit.backend.fusion_check", platform]
    try:
        res = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"mhlo.fusion check did not finish ({type(e).__name__})", []
    out = res.stdout.strip().splitlines()
    if res.returncode == 0 and len(out) >= 2 and out[-2] == "OK":
        return None, list(json.loads(out[-1])["unsupported"])
    lines = (res.stdout + res.stderr).strip().splitlines() or [""]
    why = next((ln for ln in lines if "Check failed" in ln or "Error" in ln), lines[-1])
    return f"mhlo.fusion check failed (exit {res.returncode}): {why.strip()[:160]}", []


def _cache_file() -> str:
    root = config.read("cache_dir") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "purejit"
    )
    return os.path.join(root, "fusion_probe.json")


def _cache_key(platform: str, device) -> str:
    """What the probe's answer depends on: the runtime, the device, purejit's ops and the
    check itself. The answer is still the probe's; the key only says when to ask again."""
    check_src = b""
    for module in (fusion_check, fusion_routes):
        with open(module.__file__, "rb") as f:
            check_src += f.read()
    parts = [
        json.dumps(pjrt.versions(), sort_keys=True),
        platform,
        getattr(device, "device_kind", ""),
        ",".join(sorted(all_ops())),
        hashlib.sha256(check_src).hexdigest(),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def _load_cached(key: str) -> Capability | None:
    try:
        with open(_cache_file()) as f:
            entry = json.load(f).get(key)
    except (OSError, ValueError):
        return None
    if not entry:
        return None
    entry["exclude_ops"] = tuple(entry["exclude_ops"])
    return Capability(**entry)


def _store(key: str, cap: Capability):
    path = _cache_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            data = {}
        data[key] = {**cap.__dict__, "exclude_ops": list(cap.exclude_ops)}
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)  # atomic: parallel test workers may race
    except OSError:
        pass  # a read-only home: probe again next time


def _run_probe(platform: str, device) -> Capability:
    findings = []
    problem = _try_route("mhlo.fusion", device)
    unsupported: list[str] = []
    if problem is None:
        problem, unsupported = _check_in_child(platform)
    if problem is None:
        detail = "mhlo.fusion: each group is one kernel (no transpose/reshape inside a group"
        detail += ", only elementwise ops after a reduction"
        detail += f", without {', '.join(unsupported)})" if unsupported else ")"
        exclude = tuple(EXCLUDED_OPS) + tuple(unsupported)
        return Capability("mhlo.fusion", platform, detail, exclude, True, False)
    findings.append(problem)
    problem = _try_route("call", device)
    if problem is None:
        findings.append("call: each group is one kernel")
        return Capability("call", platform, "; ".join(findings))
    findings.append(problem)
    return Capability("xla", platform, "; ".join(findings))


@functools.cache
def _probe(platform: str, device_id: int) -> Capability:
    device = next(d for d in pjrt.devices(platform) if d.id == device_id)
    key = _cache_key(platform, device)
    cap = _load_cached(key)
    if cap is None:
        cap = _run_probe(platform, device)
        _store(key, cap)
    return cap


def probe_route(device=None) -> Capability:
    """Which route realises purejit's groups as XLA kernels on `device`.

    The first probe on a machine compiles a few small programs (one in a child process,
    some seconds); its answer is kept per process and in `fusion_probe.json` under
    `config.cache_dir` (default `~/.cache/purejit`), keyed by the jax/jaxlib versions, the
    device, purejit's ops and the check's source."""
    dev = device or pjrt.default_device()
    return _probe(dev.platform, dev.id)


def emit(fn, cap: Capability, **emit_kwargs) -> tuple[str, tuple[str, ...]]:
    """The StableHLO module of `fn` with its groups realised by `cap`'s route, and the XLA
    passes to switch off when compiling it."""
    if not cap.realised:
        return stablehlo.emit(fn, **emit_kwargs), ()
    ctx = stablehlo.EmitContext()
    ctx.fusion_route = cap.route
    ctx.fusion_capability = cap
    text = stablehlo.emit(fn, ctx=ctx, **emit_kwargs)
    off = (xla_fusion_pass(cap.platform),) if cap.route == "mhlo.fusion" else ()
    return text, off


def compile_realised(lowered, compile_fn):
    """Compile a `Lowered` whose groups are realised as kernels; if XLA rejects the module,
    fall back to the flat program with one warning (and keep it in `lowered.module`).

    Args:
        lowered: the `Lowered` stage (`fn`, `module`, `xla_disable_passes`, `donation`).
        compile_fn: compiles a module, called as `compile_fn(module, param_types,
            result_types, disable_xla_passes=...)` and returning (executable, cache hit);
            the caller's persistent cache (`purejit.compiler.cache.compile`).
    Returns:
        (executable, cache hit).
    """
    from jax.errors import JaxRuntimeError  # jax loads on first compile, not on import

    fn = lowered.fn
    callbacks = host_callbacks(fn)
    extra = {"host_callbacks": callbacks} if callbacks else {}
    if callbacks:
        # jaxlib takes host callbacks only with a module its MLIR context parses, and the
        # realised groups (mhlo.fusion) are not in it
        warn_once(
            "compile:callbacks",
            "fusion: a program with host callbacks (debug.print, pure_callback) runs as "
            "the flat program, which XLA fuses itself.",
        )
    else:
        try:
            return compile_fn(
                lowered.module,
                fn.param_types,
                fn.result_types,
                disable_xla_passes=lowered.xla_disable_passes,
            )
        except JaxRuntimeError as e:
            warn_once(
                f"compile:{e.__class__.__name__}",
                f"fusion: XLA rejected the program with purejit's groups as kernels "
                f"({str(e).splitlines()[0][:160]}); using the flat program, which XLA fuses.",
            )
    donation = getattr(lowered, "donation", None)
    arg_attrs = donation.arg_attrs() if donation else None
    lowered.module = stablehlo.emit(fn, arg_attrs=arg_attrs)
    lowered.xla_disable_passes = ()
    return compile_fn(lowered.module, fn.param_types, fn.result_types, **extra)


def warn_not_realised(cap: Capability):
    """The one warning for `fusion="purejit"` where the back end cannot take the groups."""
    warn_once(
        f"route:{cap.platform}",
        f'compiler_options fusion="purejit": this back end ({cap.platform}) cannot run '
        f"purejit's fusion groups as kernels ({cap.detail}); using the flat program, which "
        "XLA fuses itself.",
    )
