"""purejit.nn: activation functions."""
