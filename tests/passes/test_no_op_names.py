"""Passes ask traits, never op names, except where a pass is about one op by purpose.

An AST scan over `passes/*.py` fails on a comparison of an op's `.name` with a string
literal (`op.name == "while"`, `op.name in {"add", "multiply"}`) outside the allow-list.
Rule tables keyed by op name (simplify's per-op algebra, the batch-axis rules) are one rule
per op, like the lowering and transformation rules, and are not comparisons.
"""

from __future__ import annotations

import ast
import pathlib

PASSES = pathlib.Path(__file__).resolve().parents[2] / "passes"

# file -> why it may compare op names
ALLOWED = {
    "layout.py": "the layout pass is about dots and the transposes around them",
    "collective_matmul.py": "the pass rewrites all_gather/reduce_scatter next to dot_general",
    "_chunked_layer.py": "proves a layer's other operands are broadcast_in_dim results constant "
    "along the rows, seen through shard_map's pvary typing marks",
    "expand_threefry.py": "the pass expands threefry2x32 into its rounds",
    "merge_threefry.py": "the pass merges independent threefry2x32 hashes into one",
    "fuse_attention.py": "the pass replaces dots, softmax and masks written by hand with one op",
    "_attention_match.py": "finds the dots, softmax and masks of attention written by hand",
    "inline.py": "the pass replaces call ops by their functions",
    "roll_layers.py": "the pass rolls chains of call ops into one scan",
    "_roll_runs.py": "finds the chains of call ops roll_layers rolls",
    "_outline.py": "cuts repeated stretches of ops into call ops and puts back the unrolled",
    "_segments.py": "splits a rolled program at its scans, reading the roll pass's stacks "
    "(concatenate, slice, dynamic_slice) as rows",
    "_fold_rows.py": "moves each layer's work after a rolled scan into its body, reading the "
    "roll pass's own forms (scan, its rows read by dynamic_slice / slice, stacks built by "
    "concatenate of reshaped rows)",
    "_same_rows.py": "merges a scan's ys that are one value through optimization_barrier, "
    "the identity",
    "_known_ints.py": "proves the row indices of _row_index.py's while loop (constants, iota, "
    "add, compare, select)",
    "_attention_padding.py": "finds the position < sequence-length masks of attention",
    "split_projection.py": "splits a dot_general whose slices feed the attention op",
    "attention_sharding.py": "runs the attention ops per device, leaving shard_map bodies be",
    "guard_aliased_update.py": "works around XLA's in-place dynamic_update_slice next to "
    "reshapes, transposes and broadcasts that become bitcasts",
}


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        return bool(node.elts) and all(_is_literal(e) for e in node.elts)
    return False


def _is_name_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "name"


def name_comparisons(source: str) -> list[int]:
    """Lines comparing an `.name` attribute with a string literal (or a literal set)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for a, b in zip(sides, sides[1:]):
            if (_is_name_attr(a) and _is_literal(b)) or (_is_name_attr(b) and _is_literal(a)):
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_name_comparisons():
    src = 'a = op.name == "while"\nb = op.name in {"add", "x"}\nc = "dot" != o.name\n'
    assert name_comparisons(src) == [1, 2, 3]
    assert name_comparisons('a = op.has_trait("control_flow")\nb = p.name in names\n') == []


def test_passes_compare_op_names_only_where_allowed():
    files = sorted(PASSES.glob("*.py"))
    assert len(files) >= 10, f"expected the passes/ sources under {PASSES}"
    bad = [
        f"passes/{p.name}:{line}"
        for p in files
        if p.name not in ALLOWED
        for line in name_comparisons(p.read_text())
    ]
    assert not bad, "compare traits, not op names (or add the file to ALLOWED):\n" + "\n".join(bad)


def test_allowed_files_exist_and_say_why():
    for name, why in ALLOWED.items():
        assert (PASSES / name).is_file(), name
        assert why
