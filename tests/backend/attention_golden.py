"""The cuDNN attention calls of a fixed set of cases, as JAX writes them and as purejit does.

`record()` lowers each case with `jax.nn.dot_product_attention(implementation="cudnn")` (and
its gradient) for the CUDA platform and keeps every `__cudnn$fmha*` custom call: target,
operand and result types, layouts and the parsed `backend_config`. Run on a GPU machine (or
on a CPU host, where JAX's device queries are answered with the target below) to write
`golden/attention_jax<minor>.json`:

    python -m tests.backend.attention_golden   (from the repository root)

`purejit_calls(case)` emits the same case from purejit's IR for a CUDA target without
compiling, for tests/backend/test_attention_golden.py to diff against the file.
"""

from __future__ import annotations

import contextlib

import json
import pathlib
import re

import numpy as np

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
CUDNN, CC = 90800, (9, 0)  # the target a CPU host emits for

# name -> (B, T, S, N, K, H, mask kind, window, bias shape or None)
CASES = {
    "causal": (2, 128, 128, 4, 4, 64, "causal", None, None),
    "none_gqa": (2, 64, 128, 8, 2, 128, "none", None, None),
    "bias": (1, 64, 64, 4, 4, 32, "none", None, (1, 4, 64, 64)),
    "padding_causal": (2, 64, 64, 4, 4, 64, "padding_causal", None, None),
    "padding": (2, 64, 64, 4, 4, 64, "padding", None, None),
    "causal_window": (1, 128, 128, 2, 2, 64, "causal", (31, 0), None),
}


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), s)


_TYPE = re.compile(r"tensor<[^>]*>")


def custom_calls(text: str) -> list[dict]:
    """Every `__cudnn$fmha*` custom call of a module (pretty or generic MLIR form)."""
    out = []
    for line in text.splitlines():
        if "__cudnn$fmha" not in line:
            continue
        target = re.search(r"(__cudnn\$fmha\w*)", line).group(1)
        cfg = re.search(r'backend_config = "((?:[^"\\]|\\.)*)"', line).group(1)
        layouts = re.findall(r"(operand_layouts|result_layouts) = \[(.*?)\](?=,|\})", line)
        sig = line.rsplit(" : ", 1)[1]
        ins, outs = sig.split(" -> ")
        out.append(
            {
                "target": target,
                "backend_config": json.loads(_unescape(cfg)),
                "operands": _TYPE.findall(ins),
                "results": _TYPE.findall(outs),
                "layouts": {k: re.findall(r"dense<\[?([\d, ]*)\]?>", v) for k, v in layouts},
            }
        )
    return out


def jax_calls(name: str) -> list[dict]:
    """JAX's calls for case `name`: the training forward and the backward."""
    import jax
    import jax.numpy as jnp

    b, t, s, n, k, h, mask, window, bias = CASES[name]
    q = jax.ShapeDtypeStruct((b, t, n, h), jnp.bfloat16)
    kv = jax.ShapeDtypeStruct((b, s, k, h), jnp.bfloat16)
    lens = jax.ShapeDtypeStruct((b,), jnp.int32)
    bias_s = None if bias is None else jax.ShapeDtypeStruct(bias, jnp.bfloat16)
    pad = mask.startswith("padding")

    def f(q, k, v, bias, ql, kl):
        return jax.nn.dot_product_attention(
            q, k, v, bias, scale=0.125, is_causal=mask.endswith("causal"),
            query_seq_lengths=ql if pad else None, key_value_seq_lengths=kl if pad else None,
            local_window_size=window, implementation="cudnn",
        )  # fmt: skip

    def g(*args):
        loss = lambda *a: f(*a).astype(jnp.float32).sum()  # noqa: E731
        return jax.grad(loss, argnums=(0, 1, 2))(*args)

    with _answer_gpu_queries():
        traced = jax.jit(g).trace(q, kv, kv, bias_s, lens, lens)
        lowered = traced.lower(lowering_platforms=("cuda",))
    return custom_calls(lowered.as_text())


def purejit_calls(name: str) -> list[dict]:
    """purejit's calls for case `name`, emitted for a CUDA target without compiling."""
    from purejit.backend import cudnn_fmha, stablehlo
    from purejit.ir import Builder, TensorType, dtypes
    from purejit.ir.ops.attention import BWD, FWD, attention_attrs

    b, t, s, n, k, h, mask, window, bias = CASES[name]
    bf = dtypes.bfloat16
    bd = Builder("golden")
    q = bd.param(TensorType((b, t, n, h), bf))
    kk = bd.param(TensorType((b, s, k, h), bf))
    v = bd.param(TensorType((b, s, k, h), bf))
    args = [q, kk, v]
    if bias is not None:
        args.append(bd.param(TensorType(bias, bf)))
    pad = mask.startswith("padding")
    if pad:
        args += [bd.param(TensorType((b,), np.int32)) for _ in range(2)]
    attrs = attention_attrs(
        scale=0.125, mask=mask, window=window, has_bias=bias is not None,
        has_seq_lengths=pad, return_stats=True,
    )  # fmt: skip
    out, stats = bd.op(FWD, args, attrs)
    d_out = bd.param(TensorType(out.type.shape, bf))
    grads = bd.op(BWD, [*args, out, stats, d_out], dict(attrs, bias_grad=False))
    fn = bd.finish([out, *grads])

    class Ctx(stablehlo.EmitContext):
        platform = "cuda"
        cudnn_target = cudnn_fmha.Target(CUDNN, CC, "golden")

    return custom_calls(stablehlo.emit(fn, ctx=Ctx()))


def golden_path(version: str) -> pathlib.Path:
    major, minor = version.split(".")[:2]
    return GOLDEN / f"attention_jax{major}.{minor}.json"


@contextlib.contextmanager
def _answer_gpu_queries():
    """Without a GPU, answer JAX's cuDNN version and compute capability queries with the
    target above while JAX lowers (its lowering is plain Python; nothing is compiled), and
    put JAX's own queries back after: a test in the same process that asks JAX for its
    error on a machine without cuDNN must get that error."""
    import jax
    from jax._src.cudnn import fused_attention_stablehlo as fa

    if jax.default_backend() == "gpu":
        yield
        return
    names = ("check_cudnn_version", "check_compute_capability", "is_cuda_compute_capability_equal")
    saved = {n: getattr(fa, n) for n in names}
    fa.check_cudnn_version = lambda: CUDNN
    fa.check_compute_capability = lambda c: tuple(map(int, c.split("."))) <= CC
    fa.is_cuda_compute_capability_equal = lambda c: False
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(fa, n, f)


def record() -> pathlib.Path:
    """Write the golden file of the installed jax."""
    import jax

    data = {"jax": jax.__version__, "cases": {name: jax_calls(name) for name in CASES}}
    path = golden_path(jax.__version__)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


if __name__ == "__main__":
    print(record())
