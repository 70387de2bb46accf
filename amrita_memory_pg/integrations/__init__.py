"""Adapters to chat frameworks; each subpackage may import its framework, the core never does."""
