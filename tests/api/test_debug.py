"""debug.print, debug.callback and pure_callback inside jit and control-flow bodies, against
JAX's output; the passes keep effects (DCE, CSE, constant folding); ordered callbacks run in
program order; a program loaded from the persistent cache in a fresh process gets its
callbacks back."""

import os
import warnings
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit import lax as plax
from purejit.ir import parse, print_function, verify
from purejit.ir.ops.callback import register_callback
from purejit.passes.constant_fold import ConstantFold
from purejit.passes.cse import CSE
from purejit.passes.dce import DCE

X = np.array([1.5, -2.0, 3.25], np.float32)


def _program(debug, lax, m, pure_callback):
    """One program for both libraries: prints in straight-line code and in every body."""

    def f(x):
        debug.print("x={x} total={t}", x=x, t=x.sum())
        y = pure_callback(lambda a: np.cos(a).astype(np.float32), x, x)

        def body(i, c):
            debug.print("step {} carry {}", i, c)
            return c * 2.0

        c = lax.fori_loop(0, 3, body, x[0])

        def wbody(v):
            debug.print("while {}", v)
            return v + 1

        w = lax.while_loop(lambda v: v < 2, wbody, 0)

        def sbody(c, xi):
            debug.print("scan {} {}", c, xi)
            return c + xi, c

        s, _ = lax.scan(sbody, 0.0, x)
        lax.cond(x[0] > 0, lambda: debug.print("positive"), lambda: debug.print("negative"))
        return y + c + s + w

    return f


def _lines(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line)


def test_print_in_jit_and_bodies_matches_jax(capfd):
    jf = jax.jit(_program(jax.debug, jax.lax, jjnp, jax.pure_callback))
    ref = jf(X)
    jax.effects_barrier()
    want = capfd.readouterr().out
    pf = purejit.jit(_program(purejit.debug, plax, pnp, purejit.pure_callback))
    got = pf(X)
    got.block_until_ready()
    out = capfd.readouterr().out
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6)
    assert _lines(out) == _lines(want)
    pf(X).block_until_ready()  # the cached executable prints again, every call
    assert _lines(capfd.readouterr().out) == _lines(want)


def test_print_outside_jit_prints_at_once(capfd):
    purejit.debug.print("eager {} {k}", pnp.arange(3), k=2.5)
    jax.debug.print("eager {} {k}", jjnp.arange(3), k=2.5)
    got, want = capfd.readouterr().out.splitlines()
    assert got == want


def test_callback_sees_values_and_pure_callback_results():
    seen, jseen = [], []

    def f(debug, seen, pure_callback, x):
        debug.callback(lambda a, b: seen.append((a.tolist(), float(b))), x, x.sum())
        spec = {
            "s": jax.ShapeDtypeStruct((3,), np.float32),
            "n": jax.ShapeDtypeStruct((), np.int32),
        }
        return pure_callback(lambda v: {"s": np.sort(v), "n": np.int32(v.size)}, spec, x)

    ref = jax.jit(lambda x: f(jax.debug, jseen, jax.pure_callback, x))(X)
    got = purejit.jit(lambda x: f(purejit.debug, seen, purejit.pure_callback, x))(X)
    jax.effects_barrier()
    assert seen == jseen
    for k in ("s", "n"):
        assert np.asarray(got[k]).dtype == np.asarray(ref[k]).dtype
        np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(ref[k]))
    eager = purejit.pure_callback(lambda v: v * 2, purejit.ShapeDtypeStruct((3,), np.float32), X)
    np.testing.assert_array_equal(np.asarray(eager), X * 2)


def test_pure_callback_wrong_result_is_an_error():
    bad = purejit.jit(
        lambda x: purejit.pure_callback(
            lambda v: v[:2], purejit.ShapeDtypeStruct((3,), np.float32), x
        )
    )
    with pytest.raises(Exception, match="declared"):
        np.asarray(bad(X))


def test_unused_pure_callback_is_dropped_and_print_kept():
    calls = []

    def f(x):
        purejit.pure_callback(lambda v: calls.append(1) or v, x, x)  # unused: dead
        purejit.debug.print("kept {}", x)  # unused result, but an effect
        return x + 1

    lowered = purejit.jit(f).lower(X)
    text = lowered.ir()
    assert "pure_callback" not in text and "host_callback" in text
    purejit.jit(f)(X).block_until_ready()
    assert calls == []


def test_ordered_callbacks_run_in_program_order():
    order = []

    def f(x):
        for k in range(6):
            purejit.debug.callback(lambda v, k=k: order.append(k), x, ordered=True)
        return x

    purejit.jit(f)(X).block_until_ready()
    assert order == list(range(6))
    ir = purejit.jit(f).lower(X).ir()
    assert ir.count("ordered=true") == 6


# ---- the passes honour effects -----------------------------------------------------------------


def _ir(key_a, key_b):
    return f"""func @f(%0: f32[3], %1: s32[]) -> (f32[3]) {{
  host_callback(%0) {{callback="{key_a}", result_shapes=[], result_dtypes=[], ordered=false}} : ()
  host_callback(%0) {{callback="{key_a}", result_shapes=[], result_dtypes=[], ordered=false}} : ()
  %2 = pure_callback(%0) {{callback="{key_b}", result_shapes=[[3]], result_dtypes=[f32]}} : (f32[3])
  %3 = pure_callback(%0) {{callback="{key_b}", result_shapes=[[3]], result_dtypes=[f32]}} : (f32[3])
  case(%1) : () region() {{
    host_callback() {{callback="{key_a}", result_shapes=[], result_dtypes=[], ordered=false}} : ()
    return
  }} region() {{
    return
  }}
  %4 = constant() {{value=array<s32[]: [0]>}} : (s32[])
  case(%4) : () region() {{
    host_callback() {{callback="{key_a}", result_shapes=[], result_dtypes=[], ordered=false}} : ()
    return
  }}
  %5 = constant() {{value=array<f32[3]: [1.0, 2.0, 3.0]>}} : (f32[3])
  %6 = pure_callback(%5) {{callback="{key_b}", result_shapes=[[3]], result_dtypes=[f32]}} : (f32[3])
  %7 = add(%2, %6) : (f32[3])
  return %7
}}"""


def test_dce_cse_fold_keep_effects():
    a = register_callback(lambda *v: (), "effect")
    b = register_callback(lambda v: (np.asarray(v) * 10,), "pure")
    fn = verify(parse(_ir(a, b)))
    assert print_function(fn) == _ir(a, b)  # the text form round-trips
    cse = CSE()(fn).fn
    text = print_function(cse)
    assert text.count("host_callback(%0)") == 2  # effects are never merged
    assert text.count("pure_callback(%0)") == 1  # two identical pure calls become one
    dce = DCE()(cse).fn
    text = print_function(dce)
    assert text.count("host_callback") == 4  # unused, and inside unused cases: all kept
    folded = ConstantFold()(dce).fn
    text = print_function(folded)
    assert "pure_callback(%" in text  # the one on a parameter stays
    assert text.count("pure_callback") == 1  # the one on a constant ran at compile time
    assert text.count("case(") == 2  # a case around an effect is never folded away
    assert "array<f32[3]: [10.0, 20.0, 30.0]>" in text


# ---- the persistent cache: a fresh process gets the callbacks back ------------------------------

_SCRIPT = """
import numpy as np, purejit
from purejit.compiler import cache
purejit.config.update("cache_dir", {cache_dir!r})
@purejit.jit
def f(x):
    purejit.debug.print("value {{}}", x * 2)
    return purejit.pure_callback(lambda v: v + 1, x, x)
out = f(np.float32({value}))
print("result", float(out), "hits", cache.counters.hits, "pass_hits", cache.counters.pass_hits)
"""


def test_executable_from_the_persistent_cache_gets_its_callbacks(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    def run(value):
        code = textwrap.dedent(_SCRIPT.format(cache_dir=str(tmp_path), value=value))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    first = run(1.5)
    assert first[:2] == ["value", "3.0"] and first[2:4] == ["result", "2.5"]
    assert first[5] == "0"  # compiled
    second = run(4.0)  # a fresh process: loads the executable, runs its own callbacks
    assert second[:4] == ["value", "8.0", "result", "5.0"]
    assert second[5] == "1" and second[7] == "1"


def test_callbacks_with_purejit_fusion_run_the_flat_program(capfd):
    f = purejit.jit(
        lambda x: (purejit.debug.print("fused {}", x.sum()), x * 2 + 1)[1],
        compiler_options={"fusion": "purejit"},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = f(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), [1, 3, 5])
    assert capfd.readouterr().out == "fused 3.0\n"
