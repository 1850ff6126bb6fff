"""Tools that look inside what purejit and JAX emit for a benchmark (never timed)."""
