"""diag_service: stability governance for large-model training clusters."""

__version__ = "0.1.0"
