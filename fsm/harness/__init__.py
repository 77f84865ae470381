"""Developer tools: conformance vectors and their runner, the fuzzers, the diagram renderer.

Nothing here is imported by the runtime. This module imports nothing, so the command line can read
the default below without loading the harness."""

ADAPTER_TIMEOUT = 30.0
"""Seconds one vector's run of an adapter under grade may take (``conform --against``'s default)."""
