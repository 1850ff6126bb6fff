"""`purejit.scipy.cluster`, as `jax.scipy.cluster`: vector quantisation (`vq.vq`)."""

from purejit.scipy.cluster import vq

__all__ = ["vq"]
