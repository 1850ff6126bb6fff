"""The collective-matmul calibration's figures from injected program timings
(`purejit.backend.calibration.derive`, `time_rounds`), without devices.

A made-up device that follows the cost model exactly gives its fixed costs back. A matmul
rate read 10% off (session 12: one process read 626 TFLOP/s where others read 677-718, and
its ring step latency, then a remainder of the model's terms, fell from about 55 to 4.5 us)
must leave the fixed costs as they are, and `auto` must still decide session 12's shapes as
the measured programs ask (the ring where it was more than 2% faster, the plain program
where it was more than 2% slower)."""

import dataclasses

import pytest

from purejit.backend import calibration as backend
from purejit.passes.collective_matmul import Calibration, estimate_seconds

SIZE = backend._GPU
ITEM = 2  # bf16


@dataclasses.dataclass(frozen=True)
class Device:
    """What each calibration program costs on a device that follows the cost model: rates,
    the share of a step's shorter part hidden, a transfer's latency, and the fixed costs;
    `plain_speed`: how much faster the plain program's matmuls run than the others."""

    link: float
    collective: float
    flops: float
    overlap: float
    latency: float
    step: float
    plain: float
    plain_speed: float = 1.0

    def timings(self, n: int) -> dict:
        """Seconds per repetition of each program of `_programs` on `n` devices."""
        s = SIZE
        dot = 2 * s["dot"] ** 3 / self.flops
        large = self.latency + 4 * s["large"] / self.link
        out = {
            "small": self.latency + 4 * s["small"] / self.link,
            "large": large,
            "dot": dot,
            "gather": self.latency + 4 * s["large"] * (n - 1) / self.collective,
        }
        rows, k, f = s["ring"]
        for name, r in (("_small", backend.small_rows(rows)), ("", rows)):
            a, b = ITEM * r * k / self.link, 2 * r * k * f / self.flops
            step = max(a, b) + (1 - self.overlap) * min(a, b) + self.step
            out["ring" + name] = 2 * (b + (n - 1) * step)
            if not name:  # the same rings without transfers: a multiply and the fixed cost
                out["ring_local"] = 2 * (b + (n - 1) * (b + self.step))
            coll = ITEM * r * k * (n - 1) / self.collective
            mm = 2 * n * r * k * f / (self.flops * self.plain_speed)
            out["plain" + name] = 2 * (coll + mm + self.plain)
        return out


# the medians of session 12's per-row calibrations on 4 H200s (2 and 4 of them), with fixed
# costs inside the range that decides every measured row right: (n - 1) step - plain
# between 25 and 51 us at n = 2 with these rates, above -17 us at n = 4
H200 = {
    2: Device(244e9, 204e9, 696e12, 0.18, 20e-6, step=45e-6, plain=8e-6),
    4: Device(151e9, 298e9, 684e12, 0.21, 25e-6, step=30e-6, plain=10e-6),
}
# session 12's rows (T, D, F = 4D): the measured pass on / pass off, n = 2 and 4
ROWS = {
    2: {(2048, 2048): 1.233, (4096, 2048): 1.065, (8192, 2048): 1.101, (16384, 2048): 0.924,
        (2048, 8192): 1.060, (8192, 8192): 0.969, (16384, 8192): 1.018},
    4: {(2048, 2048): 2.396, (2048, 8192): 1.429, (8192, 2048): 1.616, (8192, 8192): 1.185},
}  # fmt: skip


def calibration(t: dict, n: int) -> Calibration:
    m = backend.derive(t, n, SIZE, ITEM)
    return Calibration(
        m["link_bytes_per_s"],
        m["flops_per_s"],
        m["step_latency_s"],
        "measured",
        m["overlap"],
        m["collective_bytes_per_s"],
        m["plain_latency_s"],
    )


def takes_ring(cal: Calibration, n: int, t: int, d: int) -> bool:
    """auto's choice for `bench.tp_mlp`'s layer (both rewrites move T x D bf16 activations
    around a T x D x 4D / n matmul)."""
    plain, ring = estimate_seconds(t * d * ITEM * (n - 1) / n, 2 * t * d * 4 * d / n, n, cal)
    return ring < plain


def remainder_step_latency(t: dict, n: int, cal: Calibration) -> float:
    """Session 12's ring step latency: what the large ring's time leaves after the model's
    bytes and flops terms (the method this file shows was fragile)."""
    rows, k, f = SIZE["ring"]
    a, b = ITEM * rows * k / cal.link_bytes_per_s, 2 * rows * k * f / cal.flops_per_s
    return (t["ring"] / 2 - b) / (n - 1) - (max(a, b) + (1 - cal.overlap) * min(a, b))


def scaled(t: dict, factor: float, names) -> dict:
    return {k: v * factor if k in names else v for k, v in t.items()}


@pytest.mark.parametrize("n", [2, 4])
def test_a_model_device_gives_its_figures_back(n):
    dev = H200[n]
    cal = calibration(dev.timings(n), n)
    assert cal.step_latency_s == pytest.approx(dev.step, rel=1e-6)
    assert cal.plain_latency_s == pytest.approx(dev.plain, rel=1e-6)
    assert cal.flops_per_s == pytest.approx(dev.flops, rel=1e-9)
    assert cal.link_bytes_per_s == pytest.approx(dev.link, rel=1e-9)
    # derive takes the small transfer's whole time (256 elements too) as the latency
    assert cal.collective_bytes_per_s == pytest.approx(dev.collective, rel=1e-4)
    assert cal.overlap == pytest.approx(dev.overlap, rel=1e-6)
    m = backend.derive(dev.timings(n), n, SIZE, ITEM)
    assert m["ring_flops_per_s"] == pytest.approx(dev.flops, rel=1e-6)
    assert m["plain_flops_per_s"] == pytest.approx(dev.flops, rel=1e-4)
    # and decides every row whose measured on and off differ by more than 2% as measured
    for (t, d), on_over_off in ROWS[n].items():
        if abs(on_over_off - 1) > 0.02:
            assert takes_ring(cal, n, t, d) == (on_over_off < 1), (n, t, d)


PERTURBED = {
    # the matmul rate program alone read 10% slow or fast (the session-12 outlier)
    "rate program 10% slow": lambda dev, n: scaled(dev.timings(n), 1.1, {"dot"}),
    "rate program 10% fast": lambda dev, n: scaled(dev.timings(n), 0.9, {"dot"}),
    # the process's matmuls all 10% slower or faster (every program that multiplies)
    "matmuls 10% slow": lambda dev, n: dataclasses.replace(dev, flops=dev.flops / 1.1).timings(n),
    "matmuls 10% fast": lambda dev, n: dataclasses.replace(dev, flops=dev.flops / 0.9).timings(n),
    # transfers all 10% slower or faster
    "links 10% slow": lambda dev, n: dataclasses.replace(
        dev, link=dev.link / 1.1, collective=dev.collective / 1.1
    ).timings(n),
    "links 10% fast": lambda dev, n: dataclasses.replace(
        dev, link=dev.link / 0.9, collective=dev.collective / 0.9
    ).timings(n),
    # the rate programs (transfers, matmul, overlap) 10% off while the MLP programs are not
    "rate programs 10% slow": lambda dev, n: scaled(
        dev.timings(n), 1.1, {"small", "large", "dot", "gather"}
    ),
}


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("what", sorted(PERTURBED))
def test_a_10_percent_error_leaves_the_fixed_costs_and_the_decisions(n, what):
    dev = H200[n]
    base = calibration(dev.timings(n), n)
    t = PERTURBED[what](dev, n)
    cal = calibration(t, n)
    # the fixed costs come from the MLP programs' own two sizes: no measured rate enters them
    assert cal.step_latency_s == pytest.approx(base.step_latency_s, rel=1e-6), what
    assert cal.plain_latency_s == pytest.approx(base.plain_latency_s, rel=1e-6), what
    for t_, d in ROWS[n]:
        assert takes_ring(cal, n, t_, d) == takes_ring(base, n, t_, d), (what, n, t_, d)


def test_the_remainder_of_session_12_was_not_robust():
    """The check above fails for session 12's method: with the rate program 10% slow, the
    remainder step latency loses most of its value and T=4096 at n = 2 takes the ring that
    was 6.5% slower."""
    n, dev = 2, H200[2]
    t = dev.timings(n)
    slow = scaled(t, 1.1, {"dot"})
    before = remainder_step_latency(t, n, calibration(t, n))
    after = remainder_step_latency(slow, n, calibration(slow, n))
    assert before == pytest.approx(dev.step, rel=1e-6)
    assert after < 0.3 * before, (before, after)
    old = dataclasses.replace(calibration(slow, n), step_latency_s=max(after, 0.0))
    assert takes_ring(old, n, 4096, 2048) and not takes_ring(calibration(slow, n), n, 4096, 2048)


@pytest.mark.parametrize("n", [2, 4])
def test_drift_over_every_program_scales_the_fixed_costs_alike(n):
    """Every program 10% slower (the device or host slowed during the measurement): the
    fixed costs are 10% higher, no more."""
    dev = H200[n]
    base = calibration(dev.timings(n), n)
    cal = calibration({k: 1.1 * v for k, v in dev.timings(n).items()}, n)
    assert cal.step_latency_s == pytest.approx(1.1 * base.step_latency_s, rel=1e-6)
    assert cal.plain_latency_s == pytest.approx(1.1 * base.plain_latency_s, rel=1e-6)


def test_the_plain_programs_own_matmul_rate():
    """Session 12's plain latency floored at 0 in every process: the plain program ran
    faster than a square matmul's rate said (its matmuls are n times larger). Its fixed cost
    is still found, and its matmul rate is reported (not priced: see `measure`)."""
    dev = dataclasses.replace(H200[2], plain_speed=1.05)
    cal = calibration(dev.timings(2), 2)
    assert cal.plain_latency_s == pytest.approx(dev.plain, rel=1e-6)
    m = backend.derive(dev.timings(2), 2, SIZE, ITEM)
    assert m["plain_flops_per_s"] == pytest.approx(1.05 * dev.flops, rel=1e-4)
    assert m["ring_flops_per_s"] == pytest.approx(dev.flops, rel=1e-6)
    # the remainder of session 12 for the same device: below 0, floored
    rows, k, f = SIZE["ring"]
    t_coll = ITEM * rows * k / cal.collective_bytes_per_s
    remainder = dev.timings(2)["plain"] / 2 - t_coll - 2 * 2 * rows * k * f / cal.flops_per_s
    assert remainder < 0


def test_fixed_costs_are_intercepts_floored_at_zero():
    assert backend.intercept(3.0, 5.0, 1, 2) == pytest.approx(1.0)
    assert backend.intercept(3.0, 9.0, 1, 4) == pytest.approx(1.0)
    assert backend.ring_step_latency(3.0, 5.0, 2, 1, 2) == pytest.approx(0.5)
    assert backend.ring_step_latency(3.0, 5.0, 4, 1, 2) == pytest.approx(1.0 / 6)
    assert backend.plain_latency(3.0, 5.0, 1, 2) == pytest.approx(0.5)
    # a line through the origin or below it (noise): no fixed cost, never a negative one
    assert backend.ring_step_latency(2.0, 4.0, 2, 1, 2) == 0.0
    assert backend.plain_latency(1.0, 4.0, 1, 2) == 0.0


def test_small_rows():
    assert backend.small_rows(4096) == 1024
    assert backend.small_rows(64) == 16 and backend.small_rows(2) == 1


def test_rounds_are_interleaved_and_a_slow_round_does_not_move_the_median():
    """Every program runs once to warm up, then once per round in the given order; each
    time is a median, so one round 3x slower changes nothing."""
    order, now = [], [0.0]
    cost = {"a": 1.0, "b": 2.0}

    def run(name):
        def go():
            order.append(name)
            slow = 3.0 if len(order) == 5 else 1.0  # the second timed round's "a"
            now[0] += cost[name] * slow

        return go

    got = backend.time_rounds({k: run(k) for k in cost}, 4, clock=lambda: now[0])
    assert order == ["a", "b"] * 5
    assert got == {"a": [1.0, 3.0, 1.0, 1.0], "b": [2.0] * 4}
    assert backend.median(got["a"]) == 1.0 and backend.median(got["b"]) == 2.0
