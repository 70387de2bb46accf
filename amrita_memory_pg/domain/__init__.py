"""Pure logic: no I/O, no clock, no randomness. Everything here is unit-tested without a database."""
