"""purejit.lax: JAX's lax names for purejit's primitives."""
