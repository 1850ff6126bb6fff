"""Where the attention rewrite (`purejit.passes.fuse_attention`) runs, and with which options.

It runs twice over a program, both times on the primal program the user wrote:
- in `grad` / `vjp` / `value_and_grad` under `jit`, on the traced function before it is
  linearized (so the fused op's own VJP gives the backward, and remat plans around it);
- first in the `jit` pipeline, for what is left (forward-only programs).

It runs only where the target has the fused kernel (an NVIDIA GPU with cuDNN; head dims up to
256 on Hopper and later, 128 before) and `fused_attention` is on: `purejit.jit(f,
compiler_options={"fused_attention": False})` or `purejit.config.update("fused_attention",
False)` keep the program as written. On CPU and TPU it never runs, so programs there are
exactly what they were without it. Fusion changes result bits (flash attention's rounding);
`explain` lists each fusion and each refusal with the reason.

Only purejit.nn.softmax's own `custom_jvp` rule counts as a softmax to fuse (found here by
identity, including the rules `vmap` derives from it); a user's custom softmax never does.
"""

from __future__ import annotations


from purejit.config import config
from purejit.backend import cudnn_fmha
from purejit.custom_derivatives import _JVPRule
from purejit.ir import Function
from purejit.passes.fuse_attention import FuseAttention
from purejit.tracing import context
from purejit.transforms.autodiff._core import CUSTOM_RULES
from purejit.transforms.autodiff.remat import current_settings
from purejit.transforms.batching.autodiff import _BatchedJVP

# rule keys already classified: (how many of CUSTOM_RULES were seen, the softmax ones)
_seen = [0, ()]
# the custom_jvp functions that are purejit's own softmax (purejit.nn registers its one)
_TRUSTED: list = []


def trust_softmax(owner) -> None:
    """Mark `owner`, a `custom_jvp` function of purejit's that computes a softmax along its
    static axis with the standard JVP, as one the rewrite may replace."""
    _TRUSTED.append(owner)


def softmax_rule_keys() -> tuple[str, ...]:
    """The `custom_jvp_call` rule keys that are purejit.nn.softmax's (or a vmap of it)."""
    keys = list(CUSTOM_RULES)
    if len(keys) != _seen[0]:
        found = list(_seen[1])
        for key in keys[_seen[0] :]:
            rule = CUSTOM_RULES[key]
            while isinstance(rule, _BatchedJVP):
                rule = rule.rule
            if isinstance(rule, _JVPRule) and any(rule.owner is o for o in _TRUSTED):
                found.append(key)
        _seen[0], _seen[1] = len(keys), tuple(found)
    return _seen[1]


def target_options() -> dict | None:
    """The pass's limits for the default device (JAX's flash-attention checks: head dims up
    to 256 on Hopper and later, 128 before; a v head dim of its own from cuDNN 9.10 on
    Hopper), or None where no fused kernel exists (no CUDA device with cuDNN)."""
    tgt = cudnn_fmha.target(None)
    if tgt is None:
        return None
    hopper = tgt.compute_capability >= (9, 0)
    return {
        "max_head_dim": 256 if hopper else 128,
        "distinct_v_head_dim": hopper and tgt.cudnn_version >= 91000,
        "window": tgt.cudnn_version >= 90200,
    }


def rewrite_may_run() -> bool:
    """Whether the rewrite runs on the program being traced now: under a `jit` whose
    `fused_attention` is on, for a target with the fused kernel (what `fuse_for_grad` and
    `jit_pass` decide)."""
    s = current_settings()
    return bool(getattr(s, "fused_attention", False)) and target_options() is not None


def make_pass(
    enabled: bool, options: dict | None = None, partitioned: bool = False
) -> FuseAttention | None:
    """The pass for this process's target, or None when it must not run.

    Args:
        enabled: the `fused_attention` option in force (compiler option, else config).
        options: the target's limits (default: `target_options()`); tests pass them to run
            the pass as a GPU compile would.
        partitioned: the program is a `jit` with shardings. Its projections are not split
            (`passes/split_projection.py`): the split's barrier holds each weight's columns
            with the layer's input, so the all-gather XLA's partitioner puts behind it waits
            for the layer and overlaps nothing (2 H200s, FSDP: 1 of 13 all-gathers
            asynchronous, 1.06x `jax.jit`'s step), and the split's size threshold would read
            the program's global shapes, not a device's.
    """
    if not enabled:
        return None
    options = target_options() if options is None else options
    if options is None:
        return None
    options = {"split_projections": bool(config.read("attention_split_projections")), **options}
    if partitioned:
        options["split_projections"] = False
    return FuseAttention(trusted_rules=softmax_rule_keys(), **options)


def jit_pass(compiler_options) -> FuseAttention | None:
    """The pass at the head of a `jit` pipeline with these `CompilerOptions`, or None."""
    return make_pass(compiler_options.attention_enabled(), partitioned=compiler_options.partitioned)


def collecting():
    """Collect what the rewrite does inside differentiations traced in this block: one
    entry per fusion or refusal, `{"where": "grad", "fused" or "refused": ..., "loc"}`."""
    return context.collecting_attention_reports()


def fuse_for_grad(fn: Function) -> Function:
    """`fn` (a program about to be linearized) with its attention fused, when the enclosing
    `jit`'s options allow it; eager differentiation is left as written."""
    s = current_settings()
    p = make_pass(
        bool(getattr(s, "fused_attention", False)), partitioned=getattr(s, "partitioned", False)
    )
    if p is None:
        return fn
    res = p(fn)
    reports = context.ctx.attention_reports
    if reports:
        reports[-1].extend(report_entries(res.report, "grad"))
    return res.fn


def report_entries(report: dict, where: str) -> list[dict]:
    """The pass's report as `explain` lists it: one entry per fusion or refusal."""
    out = [{"where": where, "fused": True, **e} for e in report.get("fused", [])]
    out += [{"where": where, "fused": False, **e} for e in report.get("refused", [])]
    return out
