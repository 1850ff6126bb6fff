"""`purejit.export(f, *example_args)`: a jitted function as a portable, self-contained artifact.

The artifact holds the program as versioned StableHLO bytecode
(`stablehlo.serialize_portable_artifact`) plus everything needed to call it: the input and
output tree structures and each leaf's shape and dtype. `Exported.serialize()` gives bytes;
`purejit.deserialize(bytes)` rebuilds it in any process, without importing the code that
defined `f` (nothing is pickled), and calling it compiles the bytecode with XLA (through the
persistent cache when `cache_dir` is set) and checks every argument's shape and dtype first.

Compatibility window. The bytecode targets a StableHLO version, by default the one
`stablehlo.get_version_from_compatibility_requirement(WEEK_12)` names (1.13.7 on jaxlib
0.10.2): any consumer whose StableHLO is at least that version can load it, i.e. jaxlib
releases from about 12 weeks before the producer onwards, and StableHLO promises that newer
consumers keep reading it for 5 years (its backward-compatibility guarantee). Pass
`target_version="minimum"` for the widest window (the oldest version this jaxlib writes,
0.9.0, if the program's ops exist there), `"current"` for the newest, or an explicit
"x.y.z". Static arguments are baked into the program; the artifact takes the others.

Trees are stored as JSON: tuples, lists, dicts and OrderedDicts with str or int keys and
None are portable; namedtuples, defaultdicts and custom registered nodes are refused with
`ExportError`, since rebuilding them would need the user's classes or factories.
"""

from __future__ import annotations

import collections
import hashlib
import importlib.metadata
import json
from dataclasses import dataclass, field

import numpy as np

from purejit.api import Jitted, jit
from purejit.backend import pjrt
from purejit.compiler import cache as compile_cache
from purejit.runtime.array import Array, as_array
from purejit.tracing import ShapedArray
from purejit.ir import dtypes as irdt
from purejit.tree_util import PyTreeDef, tree_flatten, tree_paths, tree_unflatten

_MAGIC = b"PUREJIT-EXPORT\n"
_FORMAT = 1


class ExportError(ValueError):
    """The function cannot be exported, or the bytes are not a valid purejit export."""


@dataclass
class Exported:
    """An exported function: portable StableHLO plus its calling convention."""

    name: str
    in_tree: PyTreeDef  # ((positional...), {keyword...}) of the non-static arguments
    in_avals: tuple[ShapedArray, ...]
    out_tree: PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    stablehlo: bytes  # portable artifact (versioned bytecode)
    target_version: str
    in_names: tuple[str, ...] = ()
    producer: dict = field(default_factory=dict)
    _exe: object = field(default=None, repr=False, compare=False)

    def __call__(self, *args, **kwargs):
        """Run it; every argument must have exactly the exported shape and dtype."""
        leaves, tree = tree_flatten((tuple(args), kwargs))
        if tree != self.in_tree:
            raise TypeError(
                f"exported {self.name} takes arguments structured as {self.in_tree}, got {tree}"
            )
        bufs = []
        for name, x, want in zip(self._names(), leaves, self.in_avals):
            a = as_array(x)
            if tuple(a.shape) != tuple(want.shape) or np.dtype(a.dtype) != np.dtype(want.dtype):
                raise TypeError(
                    f"exported {self.name}: argument {name} is {a.aval.type}, but it was "
                    f"exported for {want.type}; export it again for other shapes or dtypes"
                )
            bufs.append(a.buffer)
        outs = self._executable().execute(bufs)
        arrays = [Array(buf=o, weak_type=a.weak_type) for o, a in zip(outs, self.out_avals)]
        return tree_unflatten(self.out_tree, arrays)

    call = __call__

    def _names(self):
        return self.in_names or tree_paths(self.in_tree, "args")

    def _executable(self):
        if self._exe is None:
            params = [a.type for a in self.in_avals]
            results = [a.type for a in self.out_avals]
            self._exe, _ = compile_cache.compile(self.stablehlo, params, results)
        return self._exe

    def mlir_module(self) -> str:
        """The StableHLO module as MLIR text (read back from the bytecode)."""
        return pjrt.artifact_text(self.stablehlo)

    def serialize(self) -> bytes:
        """Bytes that `purejit.deserialize` turns back into this artifact."""
        header = {
            "format": _FORMAT,
            "name": self.name,
            "in_tree": treedef_to_json(self.in_tree),
            "out_tree": treedef_to_json(self.out_tree),
            "in_avals": [_aval_json(a) for a in self.in_avals],
            "out_avals": [_aval_json(a) for a in self.out_avals],
            "in_names": list(self.in_names),
            "target_version": self.target_version,
            "producer": self.producer,
            "length": len(self.stablehlo),
            "sha256": hashlib.sha256(self.stablehlo).hexdigest(),
        }
        return _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + self.stablehlo


def export(f, *example_args, target_version: str | None = None, **example_kwargs) -> Exported:
    """Trace and lower `f` for the shapes of the example arguments; return an `Exported`.

    Args:
        f: a function or a `purejit.jit` wrapper (its static arguments are honoured and baked
            into the program).
        *example_args, **example_kwargs: arrays, or shape specs with `.shape` and `.dtype`
            (e.g. `purejit.ShapedArray`, `jax.ShapeDtypeStruct`), fixing the signature.
        target_version: StableHLO version of the bytecode: "week_12" (default), "week_4",
            "minimum", "current" or an explicit "x.y.z".
    Returns:
        An `Exported`, callable, with `.serialize()`.
    """
    jitted = f if isinstance(f, Jitted) else jit(f)
    sig = jitted.signature(example_args, example_kwargs, shapes_only=True)
    lowered = jitted.lower_signature(sig)
    versions = pjrt.stablehlo_versions()
    target = target_version or "week_12"
    target = versions.get(target, target)
    try:
        artifact = pjrt.portable_artifact(lowered.module, target)
    except Exception as e:
        raise ExportError(
            f"export {jitted.__name__}: StableHLO cannot be written for version {target} "
            f"({type(e).__name__}: {e}); try target_version='current'"
        ) from e
    treedef_to_json(sig.tree), treedef_to_json(lowered.out_tree)  # refuse non-portable trees now
    names = tuple(sig.paths)
    return Exported(
        jitted.__name__,
        sig.tree,
        tuple(ShapedArray(a.shape, a.dtype, False) for a in sig.avals),
        lowered.out_tree,
        tuple(lowered.out_avals),
        artifact,
        target,
        names,
        {"purejit": _purejit_version(), **pjrt.versions(), "platform": pjrt.platform()},
    )


def deserialize(data: bytes) -> Exported:
    """Rebuild an `Exported` from `Exported.serialize()` bytes (no user code is imported)."""
    data = bytes(data)
    if not data.startswith(_MAGIC):
        raise ExportError("not a purejit export (bad magic bytes)")
    rest = data[len(_MAGIC) :]
    nl = rest.find(b"\n")
    try:
        header = json.loads(rest[:nl]) if nl >= 0 else None
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise ExportError("corrupt purejit export header")
    if header.get("format") != _FORMAT:
        raise ExportError(
            f"purejit export format {header.get('format')} is not supported (this purejit "
            f"reads format {_FORMAT})"
        )
    artifact = rest[nl + 1 :]
    if len(artifact) != header["length"] or (
        hashlib.sha256(artifact).hexdigest() != header["sha256"]
    ):
        raise ExportError("purejit export is truncated or corrupt (checksum mismatch)")
    return Exported(
        header["name"],
        treedef_from_json(header["in_tree"]),
        tuple(_aval_from_json(a) for a in header["in_avals"]),
        treedef_from_json(header["out_tree"]),
        tuple(_aval_from_json(a) for a in header["out_avals"]),
        artifact,
        header["target_version"],
        tuple(header.get("in_names", ())),
        header.get("producer", {}),
    )


# --- JSON encodings ----------------------------------------------------------------------


def treedef_to_json(td: PyTreeDef):
    """A JSON value for a tree of tuples, lists, dicts (str/int keys) and None."""
    if td.kind is None:
        return "*"
    children = [treedef_to_json(c) for c in td.children]
    if td.kind is tuple:
        return {"tuple": children}
    if td.kind is list:
        return {"list": children}
    if td.kind is type(None):
        return {"none": []}
    if td.kind in (dict, collections.OrderedDict):
        keys = []
        for k in td.aux:
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise ExportError(
                    f"cannot export a dict key {k!r} of type {type(k).__name__}: only str and "
                    "int keys are portable"
                )
            keys.append(["s", k] if isinstance(k, str) else ["i", k])
        tag = "dict" if td.kind is dict else "ordered_dict"
        return {tag: children, "keys": keys}
    raise ExportError(
        f"cannot export the pytree node type {td.kind.__module__}.{td.kind.__qualname__}: "
        "rebuilding it would need that class in the loading process. Only tuples, lists, "
        "dicts, OrderedDicts and None are portable; convert it (e.g. a namedtuple with "
        "._asdict())."
    )


def treedef_from_json(obj) -> PyTreeDef:
    """The inverse of `treedef_to_json`."""
    if obj == "*":
        return PyTreeDef(None, None, ())
    if not isinstance(obj, dict):
        raise ExportError(f"corrupt tree structure in purejit export: {obj!r}")
    if "tuple" in obj:
        return PyTreeDef(tuple, None, tuple(treedef_from_json(c) for c in obj["tuple"]))
    if "list" in obj:
        return PyTreeDef(list, None, tuple(treedef_from_json(c) for c in obj["list"]))
    if "none" in obj:
        return PyTreeDef(type(None), None, ())
    for tag, kind in (("dict", dict), ("ordered_dict", collections.OrderedDict)):
        if tag in obj:
            keys = tuple(k if t == "s" else int(k) for t, k in obj["keys"])
            return PyTreeDef(kind, keys, tuple(treedef_from_json(c) for c in obj[tag]))
    raise ExportError(f"corrupt tree structure in purejit export: {obj!r}")


def _aval_json(a: ShapedArray) -> list:
    return [list(a.shape), irdt.dtype_name(a.dtype), bool(a.weak_type)]


def _aval_from_json(obj) -> ShapedArray:
    shape, dt, weak = obj
    return ShapedArray(tuple(int(d) for d in shape), irdt.dtype_from_name(dt), bool(weak))


def _purejit_version() -> str:
    try:
        return importlib.metadata.version("purejit")
    except importlib.metadata.PackageNotFoundError:
        return "?"
