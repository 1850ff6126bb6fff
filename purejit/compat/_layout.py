"""`jax.experimental.layout` in drop-in mode: the `Layout` and `Format` values libraries build
and inspect.

A `Format` pairs an array's memory layout with its sharding. purejit always lets XLA pick
the default (row-major) layout and has no way to request another, so these are plain values:
libraries that only build, compare and take them apart (Flax's `spmd` maps a function over a
`Format`'s sharding) work, and purejit's `jit`/`device_put` refuse a `Format` where a
sharding is expected (they accept `NamedSharding` and `SingleDeviceSharding` only).
`with_layout_constraint` is absent: it would need a layout purejit cannot ask XLA for.
"""

from __future__ import annotations

from purejit.sharding import Sharding


class _AutoLayout:
    """`Layout.AUTO`: the compiler chooses the layout."""

    def __repr__(self):
        return "AUTO"


AUTO = _AutoLayout()


class Layout:
    """A dense layout: dimensions from major to minor, optional tiling (as XLA states it)."""

    AUTO = AUTO

    def __init__(
        self,
        major_to_minor: tuple[int, ...],
        tiling: tuple[tuple[int, ...], ...] | None = None,
        sub_byte_element_size_in_bits: int = 0,
    ):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(tuple(t) for t in tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def _key(self):
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __repr__(self):
        return (
            f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})"
        )

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def update(self, **kwargs) -> Layout:
        """A copy with the given fields replaced."""
        fields = dict(
            major_to_minor=self.major_to_minor,
            tiling=self.tiling,
            sub_byte_element_size_in_bits=self.sub_byte_element_size_in_bits,
        )
        fields.update(kwargs)
        return Layout(**fields)

    def check_compatible_aval(self, aval_shape: tuple[int, ...]) -> None:
        """Raise ValueError if the layout's rank is not the shape's."""
        if len(self.major_to_minor) != len(aval_shape):
            raise ValueError(
                f"Layout: major_to_minor={self.major_to_minor} has rank "
                f"{len(self.major_to_minor)}, the value's shape {tuple(aval_shape)} has rank "
                f"{len(aval_shape)}; give one entry per dimension"
            )


class Format:
    """An array's layout (`None`, `Layout.AUTO` or a `Layout`) and sharding (or `None`)."""

    __slots__ = ("layout", "sharding")

    def __init__(self, layout=None, sharding=None):
        if not isinstance(layout, (Layout, _AutoLayout, type(None))):
            raise TypeError(
                f"Format: layout must be None, Layout.AUTO or a Layout, got {layout!r} "
                f"of type {type(layout).__name__}"
            )
        if not isinstance(sharding, (Sharding, type(None))):
            raise TypeError(
                f"Format: sharding must be None or a sharding, got {sharding!r} of type "
                f"{type(sharding).__name__}"
            )
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(
                "Format: a concrete Layout needs a concrete sharding; pass a NamedSharding "
                "or SingleDeviceSharding as `sharding`"
            )
        self.layout = layout
        self.sharding = sharding

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __eq__(self, other):
        return (
            isinstance(other, Format)
            and self.layout == other.layout
            and self.sharding == other.sharding
        )


__all__ = ["Format", "Layout"]
