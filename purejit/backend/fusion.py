"""How purejit's `fusion` groups reach XLA, the probe that decides it, and kernel counting.

Routes for a `fusion` op (chosen per compile, see `purejit/compile_options.py`):

    "xla"          inline the region: a flat program, XLA fuses as it likes (the default)
    "mhlo.fusion"  an `mhlo.fusion` op with `fusion_kind = kLoop`: exactly one XLA kernel
    "call"         a private function called with `inlineable = "false"`: XLA fuses inside

Which route works depends on the jaxlib and the back end (measured: jaxlib 0.10.2 CPU takes
`mhlo.fusion` for single-result groups, and aborts the process on multi-result ones; the GPU
build rejects `mhlo.fusion` and does not fuse inside non-inlined calls). `probe_route` finds
out by compiling two tiny two-group programs and counting their kernels, never by reading a
version string. Every emitted group is tagged with the MLIR location
`loc("purejit.fusion.N")`, which XLA keeps as `op_name` metadata, so `explain` can match
XLA's kernels to purejit's groups.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

ROUTES = ("xla", "mhlo.fusion", "call")
TAG = "purejit.fusion."

# the XLA pass that fuses on each platform; switched off when purejit's groups are the kernels
_XLA_FUSION_PASS = {
    "cpu": "fusion",
    "gpu": "priority-fusion",
    "cuda": "priority-fusion",
    "rocm": "priority-fusion",
}


def xla_fusion_pass(platform: str) -> str:
    return _XLA_FUSION_PASS.get(platform, "fusion")


# ---- emission -------------------------------------------------------------------------------


def _next_tag(ctx) -> str:
    n = getattr(ctx, "fusion_count", 0)
    ctx.fusion_count = n + 1
    return f"{TAG}{n}"


def _tag_text(text: str, tag: str) -> str:
    """Append `loc(tag)` to every complete op line of `text` (nested regions included)."""
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith(("%", '"', "})")) and not s.endswith(("{", "(")) and " loc(" not in s:
            line = f'{line} loc("{tag}")'
        out.append(line)
    return "\n".join(out)


def _tag_lines(ctx, start: int, tag: str):
    """Tag every op emitted since `start` with `loc(tag)`; XLA keeps it as `op_name`."""
    for i in range(start, len(ctx.lines)):
        ctx.lines[i] = _tag_text(ctx.lines[i], tag)


_warned: set[str] = set()


def _warn_once(key: str, msg: str):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(msg, RuntimeWarning, stacklevel=3)


def lower_fusion(ctx, op, args: list[str]) -> list[str]:
    """The lowering rule of the IR `fusion` op (registered in stablehlo.py)."""
    route = getattr(ctx, "fusion_route", "xla")
    tag = _next_tag(ctx)
    (body,) = op.regions
    cap = getattr(ctx, "fusion_capability", None)
    problem = None if route == "xla" else route_problem(body, route, cap)
    if problem is not None:
        _warn_once(
            f"unsafe:{route}:{problem}",
            f"fusion: a group with {problem} cannot be realised with {route} on this back "
            "end; it is inlined and XLA fuses it (run the default pipeline, which forms only "
            "groups the back end takes).",
        )
        route = "xla"
    start = len(ctx.lines)
    in_types = [v.type for v in op.operands]
    out_types = [r.type for r in op.results]
    if route == "mhlo.fusion":
        region = ctx.region(body)
        outs = ctx.op(
            "mhlo.fusion",
            args,
            in_types,
            out_types,
            "fusion_kind = #mhlo<fusion_kind kLoop>",
            [region],
        )
    elif route == "call":
        sym = tag.replace(".", "_")
        ctx.module_ops[sym] = _private_func(ctx, sym, body)
        attrs = f'callee = @{sym}, mhlo.frontend_attributes = {{inlineable = "false"}}'
        outs = ctx.op("func.call", args, in_types, out_types, attrs)
    elif route == "xla":
        names = dict(zip(body.params, args))
        ctx._body(body, names)
        outs = [names[v] for v in body.results]
    else:
        raise NotImplementedError(f"fusion: unknown route {route!r}; known: {list(ROUTES)}")
    _tag_lines(ctx, start, tag)
    return outs


def route_problem(body, route: str, cap: Capability | None = None) -> str | None:
    """What in a group's region `route` cannot take (see fusion_check.py), or None."""
    from purejit.backend.fusion_check import EXCLUDED_OPS

    if len(body.results) != 1:
        return f"{len(body.results)} results"
    if route != "mhlo.fusion":
        return None
    excluded = set(EXCLUDED_OPS) | set(cap.exclude_ops if cap else ())
    after_reduction: set = set()
    for op in body.walk():
        if op.name in excluded:
            return f"a {op.name}"
        if any(v in after_reduction for v in op.operands):
            if not op.has_trait("elementwise"):
                return f"a {op.name} after a reduction"
            after_reduction.update(op.results)
        if op.has_trait("reduction"):
            after_reduction.update(op.results)
    return None


def _private_func(ctx, sym: str, body) -> str:
    from purejit.backend.stablehlo import mlir_type

    saved_lines, saved_indent = ctx.lines, ctx.indent
    ctx.lines, ctx.indent = [], "    "
    names, params = {}, []
    for p in body.params:
        n = ctx.fresh()
        names[p] = n
        params.append(f"{n}: {mlir_type(p.type)}")
    ctx._body(body, names)
    outs = ", ".join(names[v] for v in body.results)
    types = ", ".join(mlir_type(v.type) for v in body.results)
    ctx.lines.append(f'    "func.return"({outs}) : ({types}) -> ()')
    lines = ctx.lines
    ctx.lines, ctx.indent = saved_lines, saved_indent
    head = f"func.func private @{sym}({', '.join(params)}) -> ({types}) {{"
    return "\n".join([head, *lines, "  }"])


# ---- kernels in compiled HLO -----------------------------------------------------------------

# instructions that launch nothing: views, plumbing and control (whose bodies are walked)
_FREE = {
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
    "partition-id", "replica-id", "opt-barrier", "add-dependency", "domain",
}  # fmt: skip
_CONTROL = {"call", "while", "conditional", "async-start", "async-done"}
_COMP_HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_CALLS = re.compile(r"\b(?:calls|to_apply|body|condition)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_OP_NAME = re.compile(r'op_name="([^"]*)"')


@dataclass
class Kernel:
    """One kernel of a compiled executable: a top-level fusion, custom call or lone op."""

    name: str
    opcode: str
    kind: str  # fusion kind (kLoop, kInput, kCustom, ...) or the opcode
    op_names: set = field(default_factory=set)  # op_name metadata inside it

    def groups(self) -> set[int]:
        """purejit fusion groups (by number) whose ops are in this kernel."""
        return {int(n[len(TAG) :]) for n in self.op_names if n.startswith(TAG)}


def _split_instruction(line: str):
    """(name, opcode, rest) of an HLO instruction line, or None."""
    line = line.strip()
    line = line.removeprefix("ROOT ")
    if not line.startswith("%") or " = " not in line:
        return None
    name, rhs = line.split(" = ", 1)
    if rhs.startswith("("):  # tuple shape: skip to the matching parenthesis
        depth = 0
        for i, c in enumerate(rhs):
            depth += c == "("
            depth -= c == ")"
            if depth == 0:
                rhs = rhs[i + 1 :].lstrip()
                break
    else:
        rhs = rhs.split(" ", 1)[1] if " " in rhs else ""
    m = re.match(r"([\w\-]+)\(", rhs)
    return (name.lstrip("%"), m.group(1), rhs) if m else None


def parse_hlo(text: str) -> tuple[dict[str, list], str | None]:
    """Computations of an HLO module text: {name: [(name, opcode, rest), ...]}, entry name."""
    comps: dict[str, list] = {}
    entry, current = None, None
    for line in text.splitlines():
        head = _COMP_HEAD.match(line.strip())
        if head and not line.startswith(" "):
            current = head.group(2)
            comps[current] = []
            if head.group(1):
                entry = current
            continue
        if current is not None:
            if line.strip() == "}":
                current = None
                continue
            inst = _split_instruction(line)
            if inst:
                comps[current].append(inst)
    return comps, entry


def kernels(hlo_text: str) -> list[Kernel]:
    """The kernels XLA launches: every top-level instruction that computes (fusions, custom
    calls, lone ops), looking inside call/while/conditional bodies."""
    comps, entry = parse_hlo(hlo_text)
    out: list[Kernel] = []

    def names_in(comp: str, seen: set) -> set:
        if comp in seen or comp not in comps:
            return set()
        seen.add(comp)
        found = set()
        for _, _, rest in comps[comp]:
            found.update(_OP_NAME.findall(rest))
            for callee in _CALLS.findall(rest):
                found |= names_in(callee, seen)
        return found

    def walk(comp: str, depth: int):
        if depth > 32 or comp not in comps:
            return
        for name, opcode, rest in comps[comp]:
            if opcode in _FREE:
                continue
            callees = _CALLS.findall(rest)
            for branches in _BRANCHES.findall(rest):
                callees += [b.strip().lstrip("%") for b in branches.split(",") if b.strip()]
            if opcode in _CONTROL:
                for c in callees:
                    walk(c, depth + 1)
                continue
            kind = re.search(r"kind=(k\w+)", rest)
            op_names = set(_OP_NAME.findall(rest))
            for c in callees:
                op_names |= names_in(c, set())
            out.append(Kernel(name, opcode, kind.group(1) if kind else opcode, op_names))

    if entry is not None:
        walk(entry, 0)
    return out


# ---- the capability probe --------------------------------------------------------------------


@dataclass(frozen=True)
class Capability:
    """What the running back end does with purejit's groups.

    Attributes:
        route: the best route that makes each group one kernel, or "xla" (none does).
        platform: the PJRT platform probed.
        detail: the probe's findings, for warnings and `explain`.
        exclude_ops: ops the route cannot take inside a group (the Fusion pass leaves them).
        elementwise_after_reduction: a group may hold only elementwise ops downstream of
            a reduction.
        multi_output: groups may have several results.
    """

    route: str
    platform: str
    detail: str
    exclude_ops: tuple[str, ...] = ()
    elementwise_after_reduction: bool = False
    multi_output: bool = False

    @property
    def realised(self) -> bool:
        return self.route != "xla"

    def fusion_options(self) -> dict:
        """Options of `purejit.passes.fusion.Fusion` that keep groups within the route."""
        if not self.realised:
            return {}
        return {
            "multi_output": self.multi_output,
            "exclude_ops": self.exclude_ops,
            "elementwise_after_reduction": self.elementwise_after_reduction,
            "min_group_ops": 1,  # lone fusible ops too: XLA may not rewrite a kernel
            # layout assignment relays a transpose's neighbours (making it a bitcast) but not
            # the inside of a pre-built fusion, which the HLO verifier then rejects
            "keep_apart_from": ("transpose",) if self.route == "mhlo.fusion" else (),
            # XLA CPU aborts (`Check failed: has_layout()`) on a pre-built fusion that reads
            # or writes pred values (found by tests/passes/fusion_abort_repro.py)
            "bool_boundaries": self.route != "mhlo.fusion",
        }


def _probe_function():
    """Two single-result loop groups in a chain: sin(cos(x)) then tanh(y)*y + 1."""
    from purejit.ir import Builder, Function, TensorType

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
    fn: Function = b.finish([z])
    return fn


def _try_route(route: str, device) -> str | None:
    """None if `route` makes each of the probe's two groups one kernel with the right
    numbers; otherwise what went wrong."""
    from purejit.backend import pjrt, stablehlo

    fn = _probe_function()
    ctx = stablehlo.EmitContext()
    ctx.fusion_route = route
    text = stablehlo.emit(fn, ctx=ctx)
    disable = (xla_fusion_pass(device.platform),) if route == "mhlo.fusion" else ()
    from jax.errors import JaxRuntimeError

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
    import os
    import subprocess
    import sys

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
    from purejit.config import config

    root = config.read("cache_dir") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "purejit"
    )
    return os.path.join(root, "fusion_probe.json")


def _cache_key(platform: str, device) -> str:
    """What the probe's answer depends on: the runtime, the device, purejit's ops and the
    check itself. The answer is still the probe's; the key only says when to ask again."""
    from purejit.backend import fusion_check, pjrt
    from purejit.ir import all_ops

    with open(fusion_check.__file__, "rb") as f:
        check_src = f.read()
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
    from purejit.backend.fusion_check import EXCLUDED_OPS

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
    from purejit.backend import pjrt

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
    from purejit.backend import pjrt

    dev = device or pjrt.default_device()
    return _probe(dev.platform, dev.id)


def emit(fn, cap: Capability, **emit_kwargs) -> tuple[str, tuple[str, ...]]:
    """The StableHLO module of `fn` with its groups realised by `cap`'s route, and the XLA
    passes to switch off when compiling it."""
    from purejit.backend import stablehlo

    if not cap.realised:
        return stablehlo.emit(fn, **emit_kwargs), ()
    ctx = stablehlo.EmitContext()
    ctx.fusion_route = cap.route
    ctx.fusion_capability = cap
    text = stablehlo.emit(fn, ctx=ctx, **emit_kwargs)
    off = (xla_fusion_pass(cap.platform),) if cap.route == "mhlo.fusion" else ()
    return text, off


def compile_realised(lowered):
    """Compile a `Lowered` whose groups are realised as kernels (through the persistent
    cache); if XLA rejects the module, fall back to the flat program with one warning
    (and keep it in `lowered.module`). Returns (executable, cache hit)."""
    from jax.errors import JaxRuntimeError

    from purejit import compile_cache
    from purejit.backend import stablehlo

    fn = lowered.fn
    try:
        return compile_cache.compile(
            lowered.module,
            fn.param_types,
            fn.result_types,
            disable_xla_passes=lowered.xla_disable_passes,
        )
    except JaxRuntimeError as e:
        _warn_once(
            f"compile:{e.__class__.__name__}",
            f"fusion: XLA rejected the program with purejit's groups as kernels "
            f"({str(e).splitlines()[0][:160]}); using the flat program, which XLA fuses.",
        )
    donation = getattr(lowered, "donation", None)
    arg_attrs = donation.arg_attrs() if donation else None
    lowered.module = stablehlo.emit(fn, arg_attrs=arg_attrs)
    lowered.xla_disable_passes = ()
    return compile_cache.compile(lowered.module, fn.param_types, fn.result_types)


def warn_not_realised(cap: Capability):
    """The one warning for `fusion="purejit"` where the back end cannot take the groups."""
    _warn_once(
        f"route:{cap.platform}",
        f'compiler_options fusion="purejit": this back end ({cap.platform}) cannot run '
        f"purejit's fusion groups as kernels ({cap.detail}); using the flat program, which "
        "XLA fuses itself.",
    )
