"""Chat-side tools: schemas and handlers, framework-agnostic."""
