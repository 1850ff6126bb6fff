"""diffrax on purejit (tests/ecosystem/test_sci_dropin.py): Lotka-Volterra solved with Tsit5
and a PID step-size controller, saved at fixed times; exponential decay with Dopri5 and its
gradient with respect to the rate (backpropagation through the checkpointed loop); a
fixed-step Euler solve under jit; the stiff Robertson problem with the implicit Kvaerno5 (Newton
iterations through optimistix and lineax) and a gradient through Kvaerno3. `python _sci_diffrax_program.py OUT.npz` runs it on JAX,
`python -m purejit run _sci_diffrax_program.py OUT.npz` on purejit."""

import sys

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def lotka_volterra(t, y, args):
    alpha, beta, gamma, delta = args
    prey, pred = y
    return jnp.stack([alpha * prey - beta * prey * pred, delta * prey * pred - gamma * pred])


out = {}
ts = jnp.linspace(0.0, 10.0, 11)
sol = diffrax.diffeqsolve(
    diffrax.ODETerm(lotka_volterra),
    diffrax.Tsit5(),
    t0=0.0,
    t1=10.0,
    dt0=0.1,
    y0=jnp.array([10.0, 10.0]),
    args=(0.1, 0.02, 0.4, 0.02),
    saveat=diffrax.SaveAt(ts=ts),
    stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-8),
)
out["lv_ys"] = sol.ys
out["lv_steps"] = np.asarray(sol.stats["num_steps"])
out["lv_accepted"] = np.asarray(sol.stats["num_accepted_steps"])
out["lv_rejected"] = np.asarray(sol.stats["num_rejected_steps"])


def decay(rate):
    s = diffrax.diffeqsolve(
        diffrax.ODETerm(lambda t, y, k: -k * y),
        diffrax.Dopri5(),
        t0=0.0,
        t1=2.0,
        dt0=0.05,
        y0=jnp.array([1.0, 2.0]),
        args=rate,
        saveat=diffrax.SaveAt(t1=True),
        stepsize_controller=diffrax.PIDController(rtol=1e-7, atol=1e-9),
    )
    return jnp.sum(s.ys[-1])


rate = jnp.asarray(0.7)
out["decay"], out["decay_grad"] = jax.jit(jax.value_and_grad(decay))(rate)
out["decay_exact"] = 3.0 * jnp.exp(-2.0 * rate)

euler = jax.jit(lambda y0: diffrax.diffeqsolve(
    diffrax.ODETerm(lambda t, y, a: -y + jnp.sin(t)), diffrax.Euler(), t0=0.0, t1=1.0,
    dt0=0.1, y0=y0, saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 1.0, 5))).ys)  # fmt: skip
out["euler_ys"] = euler(jnp.array([1.0, -1.0]))


def robertson(t, y, args):
    y1, y2, y3 = y
    return jnp.stack([-0.04 * y1 + 1e4 * y2 * y3, 0.04 * y1 - 3e7 * y2**2 - 1e4 * y2 * y3,
                      3e7 * y2**2])  # fmt: skip


stiff = diffrax.diffeqsolve(
    diffrax.ODETerm(robertson),
    diffrax.Kvaerno5(),
    t0=0.0,
    t1=10.0,
    dt0=1e-4,
    y0=jnp.array([1.0, 0.0, 0.0]),
    saveat=diffrax.SaveAt(ts=jnp.array([0.0, 1.0, 10.0])),
    stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8),
)
out["robertson_ys"] = stiff.ys
out["robertson_steps"] = np.asarray(stiff.stats["num_steps"])


def implicit_decay(rate):
    s = diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, k: -k * y), diffrax.Kvaerno3(),
                            t0=0.0, t1=1.0, dt0=0.1, y0=jnp.array([1.0]), args=rate,
                            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8))  # fmt: skip
    return s.ys[-1, 0]


out["kvaerno_grad"] = jax.jit(jax.grad(implicit_decay))(jnp.asarray(2.0))
np.savez(sys.argv[1], **{k: np.asarray(v) for k, v in out.items()})
