"""OpenAI-compatible chat completions with tool calls, over httpx."""
