"""The ``amrita-memory`` operations command."""
