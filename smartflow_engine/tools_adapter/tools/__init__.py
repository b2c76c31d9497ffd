"""The tools, one module per family: read, write, analysis, loop, solver and store."""
