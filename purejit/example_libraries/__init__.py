"""Small libraries with the API of `jax.example_libraries` (optimizers, stax)."""
