"""Chat commands (``/memory``), framework-agnostic: adapters parse events, this replies."""
