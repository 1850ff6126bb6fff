"""`purejit.scipy.spatial`, as `jax.scipy.spatial`: its `transform` module holds `Rotation`
and `Slerp`."""

from purejit.scipy.spatial import transform

__all__ = ["transform"]
