"""The "anchor" calibration's arithmetic, on timings a model device gives (no devices run):
the fixed costs keep what the ring and plain programs' difference says, whatever the
remainders' signs, and a rate program read 10% off moves neither that difference nor the
decisions on session 12's shapes at n = 2."""

from dataclasses import replace

import pytest

from purejit.backend import calibration as cb
from purejit.passes.collective_matmul import Calibration, estimate_seconds

# session 12's median H200 figures at n = 2 (link, collective, matmul rate, overlap)
H200 = Calibration(240e9, 700e12, 0.0, overlap=0.2, collective_bytes_per_s=205e9)


def timings(cal: Calibration, n: int, size: dict, latency: float = 10e-6) -> dict:
    """Seconds per step of every calibration program on a device that follows the model."""
    rows, k, f = size["ring"]
    d, dr = size["dot"], size.get("dot_rows", size["dot"])
    t_large = latency + 4 * size["large"] / cal.link_bytes_per_s
    t_dot = 2 * dr * d * d / cal.flops_per_s
    plain, ring = estimate_seconds(2 * rows * k * (n - 1), 2 * n * rows * k * f, n, cal)
    t_small = latency + 4 * size["small"] / cal.link_bytes_per_s
    return {
        "small": t_small,
        "large": t_large,
        "dot": t_dot,
        "gather": t_small + 4 * size["large"] * (n - 1) / cal.collective_bytes_per_s,
        "overlap": max(t_large, t_dot) + (1 - cal.overlap) * min(t_large, t_dot),
        "ring": 2 * ring,  # the layer's two rewrites
        "plain": 2 * plain,
    }


def fixed(m: dict, n: int) -> float:
    """D = (n - 1) step latency - plain latency: what the fixed costs add to ring - plain."""
    return (n - 1) * m["step_latency_s"] - m["plain_latency_s"]


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("step_us, plain_us", [(45, 8), (30, -20), (-5, 10)])
def test_the_model_device_gives_its_difference_back(n, step_us, plain_us):
    dev = replace(H200, step_latency_s=step_us * 1e-6, plain_latency_s=plain_us * 1e-6)
    t = timings(dev, n, cb._GPU_ANCHOR)
    m = cb.derive(t, n, cb._GPU_ANCHOR, True, "anchor")
    want = (n - 1) * step_us * 1e-6 - plain_us * 1e-6
    assert fixed(m, n) == pytest.approx(want, abs=1e-9)
    assert m["step_latency_s"] >= 0 and m["plain_latency_s"] >= 0
    if step_us >= 0 and plain_us >= 0:  # nothing to shift: the remainders as they are
        assert m["step_latency_s"] == pytest.approx(step_us * 1e-6, abs=1e-9)
        assert m["plain_latency_s"] == pytest.approx(plain_us * 1e-6, abs=1e-9)
    # session 12's floors keep the difference only where neither remainder is negative
    old = cb.derive(t, n, cb._GPU_ANCHOR, True, "remainder")
    if plain_us < 0:
        assert fixed(old, n) != pytest.approx(want, abs=1e-7)


def test_fixed_costs_shift_both_sides_alike():
    assert cb.fixed_costs(40e-6, 10e-6, 2) == (40e-6, 10e-6)
    s, p = cb.fixed_costs(40e-6, -10e-6, 2)
    assert (s, p) == (pytest.approx(50e-6), 0.0)
    s, p = cb.fixed_costs(-10e-6, 20e-6, 4)
    assert (s, p) == (0.0, pytest.approx(50e-6))
    assert 3 * s - p == pytest.approx(3 * -10e-6 - 20e-6)


SHAPES = [(t, d, 4 * d) for t in (2048, 8192, 16384) for d in (2048, 8192)] + [(4096, 2048, 8192)]


def picks(cal: Calibration, n: int) -> list[bool]:
    """The model's choice (ring or not) for one rewrite of each of issue #31's shapes."""
    out = []
    for t, d, f in SHAPES:
        plain, ring = estimate_seconds(t * d * 2 * (n - 1) / n, 2 * t * d * f / n, n, cal)
        out.append(ring < plain)
    return out


FIELDS = ("link_bytes_per_s", "flops_per_s", "step_latency_s", "overlap",
          "collective_bytes_per_s", "plain_latency_s")  # fmt: skip


@pytest.mark.parametrize("n", [2, 4])
def test_a_rate_program_10_percent_off_changes_no_choice(n):
    """On 4 H200s one process read the matmul rate 10% low; its remainder step latency fell
    from about 55 to 4.5 us and T = 4096 took a ring that lost. The rate program also reads
    the overlap (its matmul against a transfer), so D moves with it; anchored, D moves with
    the overlap so that the rings' estimate at the anchor stays the measured one, and no
    choice on issue #31's shapes changes."""
    dev = replace(H200, step_latency_s=45e-6, plain_latency_s=8e-6)
    if n == 4:  # session 12's n = 4 figures: the switch beats a ring link 2x
        dev = replace(dev, link_bytes_per_s=150e9, collective_bytes_per_s=290e9, overlap=0.3,
                      step_latency_s=30e-6, plain_latency_s=10e-6)  # fmt: skip
    want = picks(dev, n)
    assert want == ([False] * 3 + [True] * 3 + [False] if n == 2 else [False] * 7)
    t = timings(dev, n, cb._GPU_ANCHOR)
    for scale in (0.9, 1.1):
        m = cb.derive(dict(t, dot=t["dot"] * scale), n, cb._GPU_ANCHOR, True, "anchor")
        assert picks(Calibration(**{k: m[k] for k in FIELDS}), n) == want, scale
    if n == 2:  # session 12's floors: the plain latency goes below 0, two rows flip
        old = cb.derive(dict(t, dot=t["dot"] * 1.1), n, cb._GPU_ANCHOR, True, "remainder")
        assert old["plain_latency_s"] == 0.0
        assert picks(Calibration(**{k: old[k] for k in FIELDS}), n) != want


def test_method_follows_the_environment(monkeypatch):
    monkeypatch.delenv("PUREJIT_CALIBRATION_METHOD", raising=False)
    assert cb.method_in_use() == "remainder"
    monkeypatch.setenv("PUREJIT_CALIBRATION_METHOD", "anchor")
    assert cb.method_in_use() == "anchor" and cb.method_in_use("remainder") == "remainder"
    monkeypatch.setenv("PUREJIT_CALIBRATION_METHOD", "intercept")
    with pytest.raises(ValueError, match="PUREJIT_CALIBRATION_METHOD"):
        cb.method_in_use()


def test_time_rounds_interleaves_every_program_in_one_order():
    order = []
    got = cb.time_rounds({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, 3)
    assert order == ["a", "b"] * 4  # one warm-up round, then 3
    assert [len(v) for v in got.values()] == [3, 3]
