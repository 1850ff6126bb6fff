"""Run the Array API conformance suite against purejit.numpy and jax.numpy and compare.

The suite is data-apis/array-api-tests at commit 55fcc60 with its `array-api` submodule (the
spec, which the suite parses for signatures and special cases) at 5f847a3. Check both out
outside the repository, e.g.:

    git clone https://github.com/data-apis/array-api-tests /tmp/aat
    git -C /tmp/aat checkout 55fcc60
    git clone https://github.com/data-apis/array-api /tmp/aat/array-api
    git -C /tmp/aat/array-api checkout 5f847a3
    .venv/bin/pip install hypothesis ndindex

then

    python tools/array_api_conformance.py --suite /tmp/aat --max-examples 50 --out /tmp/aat_runs

runs the suite (CPU, ARRAY_API_TESTS_VERSION=2024.12; without --x64 the 64-bit dtypes are
skipped with ARRAY_API_TESTS_SKIP_DTYPES, as neither module has them then; --disable-deadline:
purejit compiles each new op signature once, which hypothesis would otherwise count against a
test's deadline) once for each module (or `--modules purejit.numpy` for one), writes JUnit XML per
run, and prints the counts and every test jax.numpy passes that purejit.numpy does not.
`--compare A.xml B.xml` only compares two existing reports. `--runs 2` repeats purejit's run
(the goal: passing every test jax.numpy passes in two consecutive runs).
Special-case tests draw a single random example each (`.example()`), so a few of them pass
or fail by the draw, for either module.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# Why tests fail for jax.numpy and purejit.numpy alike (measured: 5 and 50 examples, CPU,
# x64 off), by test-id prefix.
_FLOORDIV = (
    "jax.numpy's float floor_divide is NumPy's divmod rule, not floor(x1 / x2): (x1 - "
    "fmod(x1, x2)) / x2, less 1 where fmod's sign differs from x2's; so inf // 2 is nan, "
    "-1.5 // inf is -1 and -0 // 2 is +0 (purejit gives jax.numpy's values; jnp."
    "floor_divide's docstring does not cover infinities or signed zeros)"
)
BOTH_FAIL = {
    "test_array_object.py::test_setitem": "arrays are immutable (x.at[idx].set(v) instead)",
    "test_creation_functions.py::test_asarray_arrays": "checks copy= by assigning into the "
    "array: arrays are immutable",
    "test_data_type_functions.py::test_finfo": "finfo's attributes are NumPy scalars, as "
    "jnp.finfo's (ml_dtypes.finfo), not Python floats",
    "test_dlpack.py::test_dunder_dlpack": "jaxlib's DLPack export refuses max_version (0, 0)",
    "test_signatures.py::test_array_method_signature": "the suite builds its example from "
    "int64, skipped without x64",
    "test_statistical_functions.py::test_cumulative_prod": "small unsigned integers "
    "accumulate in their own type (jax.numpy); the suite wants uint32",
    "test_special_cases.py::test_iop[__imod__": "jax.numpy's remainder keeps the sign of a "
    "zero dividend",
    "test_special_cases.py::test_binary[remainder": "jax.numpy's remainder keeps the sign of "
    "a zero dividend",
    "test_special_cases.py::test_binary[__mod__": "jax.numpy's remainder keeps the sign of a "
    "zero dividend",
    "test_special_cases.py::test_binary[floor_divide": _FLOORDIV,
    "test_special_cases.py::test_binary[__floordiv__": _FLOORDIV,
    "test_special_cases.py::test_iop[__ifloordiv__": _FLOORDIV,
    "test_special_cases.py::test_unary[round(x_i.is_integer())": "draws one float64 integer "
    "that float32 cannot hold (x64 off); asarray rounds it in both libraries, so round's "
    "result differs from the Python value by that conversion, for either module",
    "test_special_cases.py::test_unary[trunc(x_i.is_integer())": "draws one float64 integer "
    "that float32 cannot hold (x64 off), as for round",
    "test_special_cases.py::test_unary": "XLA's complex functions at infinities and NaNs; "
    "each such case draws one random example, so the set varies between runs",
}


def _why(test_id: str) -> str:
    return next((r for k, r in BOTH_FAIL.items() if test_id.startswith(k)), "?")


def outcomes(xml_path: Path) -> dict[str, str]:
    """test id -> 'passed' | 'failed' | 'skipped' from a JUnit XML report."""
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        cls = case.get("classname", "").replace(".", "/")
        name = case.get("name")
        file_part = cls.split("/")
        # classname is array_api_tests.test_x or array_api_tests.test_x.TestClass
        mod = next((p for p in file_part if p.startswith("test_")), file_part[-1])
        test_id = f"{mod}.py::{name}"
        if case.find("failure") is not None or case.find("error") is not None:
            out[test_id] = "failed"
        elif case.find("skipped") is not None:
            out[test_id] = "skipped"
        else:
            out[test_id] = "passed"
    return out


def run_suite(suite: Path, module: str, xml: Path, max_examples: int, extra: list[str],
              x64: bool = False) -> int:  # fmt: skip
    env = dict(os.environ)
    env.update(
        ARRAY_API_TESTS_MODULE=module,
        ARRAY_API_TESTS_VERSION="2024.12",
        JAX_PLATFORMS=env.get("JAX_PLATFORMS", "cpu"),
    )
    if not x64:
        # without x64 the 64-bit dtypes do not exist (both modules canonicalise them to 32
        # bits), so the suite's 64-bit cases test nothing but that canonicalisation
        env.setdefault("ARRAY_API_TESTS_SKIP_DTYPES", "int64,uint64,float64,complex128")
    else:
        env["JAX_ENABLE_X64"] = env["PUREJIT_ENABLE_X64"] = "1"
    cmd = [
        sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider",
        f"--max-examples={max_examples}", "--disable-deadline", f"--junitxml={xml}", *extra,
    ]  # fmt: skip
    print("$", " ".join(cmd), f"(in {suite}, ARRAY_API_TESTS_MODULE={module})", flush=True)
    return subprocess.call(cmd, cwd=suite, env=env, stdout=subprocess.DEVNULL)


def compare(jax_xml: Path, pj_xmls: list[Path]) -> int:
    jax = outcomes(jax_xml)
    print(f"jax.numpy     ({jax_xml.name}): " + _counts(jax))
    regressions = set()
    for p in pj_xmls:
        pj = outcomes(p)
        print(f"purejit.numpy ({p.name}): " + _counts(pj))
        regressions |= {t for t, o in jax.items() if o == "passed" and pj.get(t) != "passed"}
    both_fail = sorted(
        t
        for t, o in jax.items()
        if o == "failed" and all(outcomes(p).get(t) == "failed" for p in pj_xmls)
    )
    print(f"\n{len(regressions)} tests jax.numpy passes and purejit.numpy does not:")
    for t in sorted(regressions):
        print("   ", t)
    print(f"\n{len(both_fail)} tests fail for both:")
    for t in both_fail:
        print(f"    {t}: {_why(t)}")
    return 1 if regressions else 0


def _counts(res: dict[str, str]) -> str:
    n = {k: sum(1 for v in res.values() if v == k) for k in ("passed", "failed", "skipped")}
    return f"{n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", type=Path, default=Path("/tmp/aat"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/aat_runs"))
    ap.add_argument("--max-examples", type=int, default=50)
    ap.add_argument("--runs", type=int, default=1, help="purejit runs (the goal asks for 2)")
    ap.add_argument("--modules", nargs="+", default=["jax.numpy", "purejit.numpy"])
    ap.add_argument("--x64", action="store_true", help="run with 64-bit types enabled")
    ap.add_argument("--compare", nargs="+", type=Path, help="JAX_XML PUREJIT_XML...: compare only")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(args.compare[0], args.compare[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    tag = f"n{args.max_examples}"
    jax_xml = args.out / f"jax_{tag}.xml"
    pj_xmls = []
    if "jax.numpy" in args.modules:
        run_suite(args.suite, "jax.numpy", jax_xml, args.max_examples, args.pytest_args, args.x64)
    if "purejit.numpy" in args.modules:
        for i in range(args.runs):
            xml = args.out / f"purejit_{tag}_run{i + 1}.xml"
            run_suite(args.suite, "purejit.numpy", xml, args.max_examples, args.pytest_args,
                      args.x64)  # fmt: skip
            pj_xmls.append(xml)
    if jax_xml.exists() and pj_xmls:
        return compare(jax_xml, pj_xmls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
