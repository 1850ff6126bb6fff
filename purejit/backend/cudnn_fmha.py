"""cuDNN flash attention through XLA's custom calls: when it applies, and how it is written.

XLA's GPU back end registers `__cudnn$fmhaSoftmax` (no bias), `__cudnn$fmhaScaleBiasSoftmax`
(bias) and their `...Backward` forms (API version 2, row-major operand layouts) and builds
the cuDNN graph at compile time from the call's `backend_config`, a JSON object whose schema
(`backend_config` below, the one place it is written) follows what the installed jax emits
(`jax/_src/cudnn/fused_attention_stablehlo.py`; a golden file per jax minor version checks it,
`tests/backend/golden/`). Causal, padding and the sliding window are fields of that config.

Forward: operands q, k, v [B,T,N,H] (BTNH), [bias], [q_lens, kv_lens]; results the output as
logical [B,N,T,Hv] laid out (3, 1, 2, 0) (physically BTNH, so the transpose back is free),
in training the float32 logsumexp [B,N,T], and a u8[0] workspace XLA sizes. Backward:
operands q, k, v, stats, d_out, [bias], out, [lens]; results dq, dk, dv (same layout trick),
[dbias], workspace.

`plan` decides per call: the platform is CUDA, `fused_attention` is on (compiler option or
`purejit.config`; a partitioned program emits the call only inside manual computations, as
XLA's partitioner has no sharding rule for it: shard_map bodies, and the per-device attention
of `passes/attention_sharding.py`, where every mesh axis is manual, the batch is split over
the axes its rows provably follow and the call runs on each device's shard with the local
batch as in one device's program),
JAX's flash-attention checks pass (`unsupported_reason`), no row can lose every key by its
static shape (the XLA path gives such rows uniform weights, cuDNN zeros), XLA has not refused
this kind of call before (`refusals`), and for the backward, XLA is not in deterministic mode
(cuDNN's flash backward is not reproducible bit for bit) and the heads are not grouped
(cuDNN's grouped-query dk and dv are further from float64 than the written program's).
Padding calls get a small fix-up around the kernel so rows outside the lengths match the XLA
path: query rows past q_len are zero, a batch element with kv_len 0 gets the mean of v
(uniform weights).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

from purejit import config
from purejit.backend import pjrt
from purejit.ir import Builder, dtypes

FWD_TARGETS = {False: "__cudnn$fmhaSoftmax", True: "__cudnn$fmhaScaleBiasSoftmax"}
BWD_TARGETS = {False: "__cudnn$fmhaSoftmaxBackward", True: "__cudnn$fmhaScaleBiasSoftmaxBackward"}
MASK_TYPES = {
    "none": "NO_MASK",
    "causal": "CAUSAL",
    "padding": "PADDING",
    "padding_causal": "PADDING_CAUSAL",
}
_ELEMENT = {"bfloat16": "BF16", "float16": "F16"}


@dataclass(frozen=True)
class Target:
    """What cuDNN support depends on: the cuDNN version (e.g. 91000 for 9.10), the compute
    capability, and the device's name (part of a refusal's key)."""

    cudnn_version: int
    compute_capability: tuple[int, int]
    device_kind: str = ""


def _cudnn_version() -> int | None:
    for pkg in ("jax_cuda13_plugin", "jax_cuda12_plugin", "jaxlib.cuda"):
        try:
            mod = importlib.import_module(f"{pkg}._versions")
        except ImportError:
            continue
        return int(mod.cudnn_get_version())
    return None


@functools.lru_cache(maxsize=8)
def _detect(device) -> Target | None:
    cc = getattr(device, "compute_capability", None)
    version = _cudnn_version()
    if cc is None or version is None:
        return None
    major, minor = (int(x) for x in str(cc).split(".")[:2])
    return Target(version, (major, minor), str(getattr(device, "device_kind", "")))


def target(ctx) -> Target | None:
    """The cuDNN target of the module being emitted: the context's `cudnn_target` when set
    (tests emit CUDA modules on a CPU host that way), else the default GPU's; None without
    one."""
    t = getattr(ctx, "cudnn_target", None)
    if t is not None:
        return t
    if not pjrt.is_gpu():
        return None
    return _detect(pjrt.default_device())


def may_emit(platform: str | None = None, tgt: Target | None = None) -> bool:
    """Whether modules emitted in this process may hold cuDNN's attention calls: the default
    device is a CUDA GPU with cuDNN, or the fault-injection `platform` ("cuda") and `tgt`
    say so (`compiler/lower.py`'s `PUREJIT_ATTENTION_INJECT_CUDA`)."""
    if platform is not None:
        return platform == "cuda" and tgt is not None
    return target(None) is not None


# ---- what cuDNN's flash attention takes (JAX's check_is_flash_attention and check_layout) ---


def unsupported_reason(q, k, v, attrs, bias, tgt: Target, *, training: bool) -> str | None:
    """Why cuDNN flash attention cannot run this call (JAX's wording), or None.

    Args:
        q, k, v: the TensorTypes of q [B,T,N,H], k [B,S,K,H], v [B,S,K,Hv].
        attrs: the op's attributes (mask, window, ...).
        bias: the bias TensorType or None.
        tgt: the cuDNN target.
        training: whether the backward runs too (a bias then needs even T and S).
    """
    dt = q.dtype
    if dt not in (np.dtype(np.float16), dtypes.bfloat16):
        return f"Q must be fp16/bf16/fp8_e4m3fn/fp8_e5m2, got {dt}"
    b, t, n, h = q.shape
    s, hv = v.shape[1], v.shape[3]
    hopper = tgt.compute_capability >= (9, 0)
    h_max = 256 if hopper else 128
    if not (h <= h_max and h % 8 == 0):
        return f"The head dim must be <= {h_max} and a multiple of 8, but got {h}."
    if training and bias is not None and (t % 2 or s % 2):
        return f"Unsupported sequence length Q {t}, KV {s}."
    if h != hv and (tgt.cudnn_version < 91000 or not hopper):
        return "mla requires cudnn version >= 9.10 and at least hopper arch."
    if tgt.compute_capability == (10, 3) and tgt.cudnn_version < 91100:
        return "Compute capability 10.3 requires cuDNN version >= 9.11."
    window = attrs["window"]
    if window is not None:
        if tgt.cudnn_version < 90200:
            return "a sliding window requires cuDNN version >= 9.2"
        if window[1] != 0 and attrs["mask"] != "causal":
            return f"cuDNN doesn't support right window: {window[1]} when causal mask is not used."
    if bias is not None and bias.dtype != dt:
        return f"the bias dtype {bias.dtype} must be q's ({dt}) for cuDNN"
    if bias is not None and (bias.shape[2] != t or bias.shape[3] != s):
        return f"Bias must have same seq length as QKV, got {bias.shape[2]} and {bias.shape[3]}"
    return None


def blank_rows(q, k, attrs) -> bool:
    """Whether the static masks leave some query row with no key (T > S with a causal mask
    or a window): the XLA path gives such a row uniform weights, cuDNN does not."""
    t, s = q.shape[1], k.shape[1]
    causal = attrs["mask"] in ("causal", "padding_causal")
    if attrs["window"] is not None:
        left, right = attrs["window"]
        if causal or right == 0:
            return t > s or left < 0
        return t > s + right
    return causal and t > s


def window_length(attrs) -> int:
    """cuDNN's `sliding_window_length`: left + 1 (0: no window), as JAX passes it."""
    return 0 if attrs["window"] is None else attrs["window"][0] + 1


# ---- the backend_config schema --------------------------------------------------------------

_DOT_KEYS = (
    "bmm1_dot_dimension_numbers",
    "bmm2_dot_dimension_numbers",
    "bmm1_grad_gemm1_dot_dimension_numbers",
    "bmm1_grad_gemm2_dot_dimension_numbers",
    "bmm2_grad_gemm1_dot_dimension_numbers",
    "bmm2_grad_gemm2_dot_dimension_numbers",
)
# ((lhs contracting, rhs contracting), (lhs batch, rhs batch)) for BTNH operands
_BTNH_DOTS = (
    ((3, 3), ((0, 2), (0, 2))),  # q k: BTNH, BSNH -> BNTS
    ((3, 1), ((0, 1), (0, 2))),  # p v: BNTS, BSNH -> BTNH
    ((2, 1), ((0, 1), (0, 2))),  # dS q: BNTS, BTNH -> BSNH
    ((3, 1), ((0, 1), (0, 2))),  # dS k: BNTS, BSNH -> BTNH
    ((2, 1), ((0, 1), (0, 2))),  # p dO: BNTS, BTNH -> BSNH
    ((3, 3), ((0, 2), (0, 2))),  # dO v: BTNH, BSNH -> BNTS
)


def backend_config(b, n, t, s, dtype, scale, mask, window_len, *, backward) -> str:
    """The `backend_config` JSON of a forward (or backward) call, key for key as jax emits."""
    layout = {
        "dim_level_types": [],
        "dim_unique": [],
        "dim_ordered": [],
        "minor_to_major": ["3", "2", "1", "0"],
        "tiles": [],
        "element_size_in_bits": "0",
        "memory_space": "0",
        "index_primitive_type": "PRIMITIVE_TYPE_INVALID",
        "pointer_primitive_type": "PRIMITIVE_TYPE_INVALID",
        "dynamic_shape_metadata_prefix_bytes": "0",
    }
    cfg = {
        "algorithm": {
            "algo_id": "0",
            "math_type": "TENSOR_OP_MATH",
            "tuning_knobs": {"17": "1", "24": "0"},
            "is_cudnn_frontend": True,
            "workspace_size": "0",
        },
        "fmha_scale": float(scale),
        "intermediate_tensor_shape": {
            "element_type": _ELEMENT[np.dtype(dtype).name],
            "dimensions": [str(b), str(n), str(t), str(s)],
            "tuple_shapes": [],
            "layout": layout,
            "is_dynamic_dimension": [False, False, False, False],
        },
        "is_flash_attention": True,
        "mask_type": MASK_TYPES[mask],
    }
    pick = range(2, 6) if backward else range(2)
    for i in pick:
        (lc, rc), (lb, rb) = _BTNH_DOTS[i]
        cfg[_DOT_KEYS[i]] = {
            "lhs_contracting_dimensions": [str(lc)],
            "rhs_contracting_dimensions": [str(rc)],
            "lhs_batch_dimensions": [str(x) for x in lb],
            "rhs_batch_dimensions": [str(x) for x in rb],
        }
    cfg["dropout_rate"] = 0.0
    cfg["seed"] = 42
    cfg["sliding_window_length"] = int(window_len)
    cfg["max_seg_per_batch"] = 1
    cfg["is_paged_attention"] = False
    return json.dumps({"operation_queue_id": "0", "cudnn_fmha_backend_config": cfg})


# ---- refusals: kinds of call XLA would not compile, remembered per process and cache_dir -----


def refusal_key(op, tgt: Target) -> str:
    """(device kind, cuDNN version, dtype, head dim, mask kind, bias, T/S parity) of a call."""
    q, k = op.operands[0].type, op.operands[1].type
    a = op.attrs
    parts = (
        tgt.device_kind or f"sm{tgt.compute_capability[0]}{tgt.compute_capability[1]}",
        str(tgt.cudnn_version),
        dtypes.dtype_name(q.dtype),
        f"h{q.shape[3]}",
        a["mask"] + ("+window" if a["window"] is not None else ""),
        "bias" if a["has_bias"] else "nobias",
        f"t{q.shape[1] % 2}s{k.shape[1] % 2}",
        "bwd" if op.name.endswith("_bwd") else "fwd",
    )
    return "|".join(parts)


class Refusals:
    """The kinds of call XLA refused, in this process and in `cache_dir`'s
    `fused_attention_refusals.json` (read once per folder)."""

    FILE = "fused_attention_refusals.json"

    def __init__(self):
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._loaded: set[str] = set()
        self.warned = False

    def _folder(self):
        d = config.read("cache_dir")
        return os.fspath(d) if d else None

    def _load(self):
        d = self._folder()
        if d is None or d in self._loaded:
            return
        self._loaded.add(d)
        try:
            with open(os.path.join(d, self.FILE)) as f:
                self._keys.update(str(x) for x in json.load(f))
        except (OSError, ValueError):
            pass

    def __contains__(self, key: str) -> bool:
        with self._lock:
            self._load()
            return key in self._keys

    def add(self, keys) -> None:
        with self._lock:
            self._load()
            self._keys.update(keys)
            d = self._folder()
            if d is None:
                return
            try:
                os.makedirs(d, exist_ok=True)
                tmp = os.path.join(d, self.FILE + f".{os.getpid()}.tmp")
                with open(tmp, "w") as f:
                    json.dump(sorted(self._keys), f, indent=0)
                os.replace(tmp, os.path.join(d, self.FILE))
            except OSError:
                pass  # a read-only cache folder: remembered in this process only

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()
            self._loaded.clear()
            self.warned = False


refusals = Refusals()


# ---- the plan of one call -------------------------------------------------------------------


@dataclass
class Emission:
    """Settings of one module's emission (the compiler options), and the cuDNN calls it made:
    refusal key -> (op name, operand types, attributes), for `recover`."""

    enabled: bool | None = None  # None: purejit.config.fused_attention
    # inside manual computations (shard_map bodies, per-device attention; every mesh axis
    # manual), when it differs from `enabled`: a partitioned program has no sharding rule
    # for the call outside them, none is needed within (None: as `enabled`)
    manual: bool | None = None
    platform: str | None = None  # fault injection: emit for this platform instead
    target: Target | None = None  # fault injection: this cuDNN target instead
    calls: dict = field(default_factory=dict)


_local = threading.local()


@contextlib.contextmanager
def emission(
    *,
    enabled: bool | None = None,
    manual: bool | None = None,
    platform: str | None = None,
    target=None,
):
    """Emit modules in this thread with these settings; yields the `Emission` record.

    `platform="cuda"` with a `target` is the fault-injection switch: cuDNN calls are emitted
    whatever the device, so on a CPU XLA refuses them and `recover` runs for real."""
    rec = Emission(enabled, manual, platform, target)
    prev = getattr(_local, "current", None)
    _local.current = rec
    try:
        yield rec
    finally:
        _local.current = prev


def current() -> Emission | None:
    """The emission settings of this thread, if a compile set them."""
    return getattr(_local, "current", None)


@dataclass(frozen=True)
class Plan:
    target: Target
    key: str


def enabled(ctx) -> bool:
    """Whether fused attention may be emitted: the context's `fused_attention` or the
    emission's (the compiler option; inside a shard_map body its `manual` setting) when set,
    else `purejit.config.fused_attention`."""
    flag = getattr(ctx, "fused_attention", None)
    em = current()
    if flag is None and em is not None:
        inside = getattr(ctx, "manual_depth", 0) > 0
        flag = em.manual if inside and em.manual is not None else em.enabled
    return bool(config.read("fused_attention") if flag is None else flag)


def deterministic() -> bool:
    """Whether XLA is asked for reproducible results (`--xla_gpu_deterministic_ops` or
    `--xla_gpu_exclude_nondeterministic_ops` in XLA_FLAGS): then the backward is decomposed."""
    flags = os.environ.get("XLA_FLAGS", "")
    return any(
        f"--{name}=true" in flags or f"--{name}=1" in flags or flags.endswith(f"--{name}")
        for name in ("xla_gpu_deterministic_ops", "xla_gpu_exclude_nondeterministic_ops")
    )


def plan(ctx, op, platform: str, *, backward: bool) -> Plan | None:
    """How to emit `op` as a cuDNN call on `platform`, or None for the decomposed program."""
    em = current()
    if em is not None and em.platform is not None and getattr(ctx, "platform", None) is None:
        platform = em.platform
    if not enabled(ctx) or platform != "cuda":
        return None
    tgt = getattr(ctx, "cudnn_target", None) or (em.target if em is not None else None)
    tgt = tgt or target(ctx)
    if tgt is None:
        return None
    q, k, v = (x.type for x in op.operands[:3])
    a = op.attrs
    bias = op.operands[3].type if a["has_bias"] else None
    training = backward or a.get("return_stats", False)
    if unsupported_reason(q, k, v, a, bias, tgt, training=training) or blank_rows(q, k, a):
        return None
    if backward and deterministic():
        return None  # cuDNN's flash backward accumulates dq atomically: not reproducible
    if backward and k.shape[2] != q.shape[2]:
        return None  # grouped query heads: cuDNN's backward sums dk and dv over each group
        # further from a float64 reference than the written program does (median over 8
        # seeds on an H200: dv mean error 1.24x, max 1.46x; `bench.attention_numerics`), so
        # the numerics contract keeps the decomposed backward there
    if backward and a.get("bias_grad") and a["has_seq_lengths"]:
        return None  # cuDNN leaves dbias outside the lengths unwritten; a broadcast bias
        # sums it over the batch, so no fix-up after the call can mend it
    key = refusal_key(op, tgt)
    if key in refusals:
        return None
    return Plan(tgt, key)


def note_call(ctx, op, key: str) -> None:
    """Remember an emitted cuDNN call (in the context and in this thread's emission)."""
    if getattr(ctx, "fmha_calls", None) is None:
        ctx.fmha_calls = []
    ctx.fmha_calls.append(key)
    em = current()
    if em is not None:
        em.calls.setdefault(key, (op.name, [x.type for x in op.operands], dict(op.attrs)))


# ---- recovery: when XLA refuses a module with cuDNN calls -----------------------------------


def _probe(name, types, attrs, em: Emission, emit_fn, compile_fn) -> Exception | None:
    """Compile one call of this kind alone; the exception XLA raised, or None."""
    b = Builder("fused_attention_probe")
    params = [b.param(t) for t in types]
    fn = b.finish(b.op(name, params, attrs))
    with emission(enabled=True, platform=em.platform, target=em.target):
        text = emit_fn(fn)
    try:
        compile_fn(text, fn.param_types, fn.result_types)
    except Exception as e:  # noqa: BLE001 - XLA's refusal, whatever its type
        return e
    return None


def _control_fails(types, emit_fn, compile_fn) -> bool:
    """Whether `compile_fn` refuses a module of a probe's operand types with no cuDNN call."""
    b = Builder("fused_attention_control")
    params = [b.param(t) for t in types]
    fn = b.finish(b.op("negate", [params[0]]))
    try:
        compile_fn(emit_fn(fn), fn.param_types, fn.result_types)
    except Exception:  # noqa: BLE001 - whatever XLA raised, it was not about attention
        return True
    return False


def recover(em: Emission, error: Exception, emit_fn, compile_fn) -> set[str]:
    """After XLA refused a module holding cuDNN calls: compile each kind of call alone, and
    remember the kinds it refuses (this process and `cache_dir`), so that emitting the module
    again decomposes only those. Warns once per process.

    Args:
        em: the emission record of the refused module.
        error: what XLA raised.
        emit_fn: `(IR function) -> module text` (`stablehlo.emit`).
        compile_fn: `(module text, param types, result types) -> executable`.
    Returns:
        The refused keys (empty: no attention call is to blame, re-raise `error`).
    """
    if em.calls and _control_fails(next(iter(em.calls.values()))[1], emit_fn, compile_fn):
        # the same compile refuses a module with no cuDNN call (a bad XLA option, a broken
        # device): attention is not to blame, and remembering a refusal would be wrong
        return set()
    bad = {}
    for key, (name, types, attrs) in em.calls.items():
        why = _probe(name, types, attrs, em, emit_fn, compile_fn)
        if why is not None:
            bad[key] = why
    if not bad:
        return set()
    refusals.add(bad)
    if not refusals.warned:
        refusals.warned = True
        first = next(iter(bad.values()))
        reason = str(first).strip().splitlines()[0][:200] if str(first).strip() else ""
        warnings.warn(
            f"purejit: XLA refused fused attention (cuDNN) for {sorted(bad)} ({reason}); "
            "those calls run as the written (XLA) program instead. The decision is kept in "
            "cache_dir; compiler_options={'fused_attention': False} turns fusion off.",
            RuntimeWarning,
            stacklevel=3,
        )
    return set(bad)
