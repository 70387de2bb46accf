"""The use cases every surface calls, so that a rule is written once: typed inputs and
results, the pause checked first, validation once. Surfaces (chat tools, the loop's tools,
/memory, the web page and the CLI) only parse their input and map the errors at their edge."""
