"""The use cases every surface calls (issue 22): typed inputs and results, the pause
checked first, validation once. Surfaces (chat tools, the loop's tools, later /memory,
the web page and the CLI) only parse their input and map the errors at their edge."""
