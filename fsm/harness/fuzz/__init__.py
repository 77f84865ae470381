"""Property-based fuzzing of the engine (needs hypothesis: ``pip install 'toolcall-fsm[fuzz]'``).

The property fuzzer starts from ground-truth calls (random names; nested arguments with unicode,
escapes, empty objects, large values), renders them into a wire shape's events under that shape's
legal variations (fragment boundaries anywhere, inside escapes and multi-byte characters; interleaved
parallel calls; whole calls per event; resends; omitted index; omitted or empty ids; repeated
metadata; the finish in its own event; raw SSE bytes cut anywhere), feeds them to the engine, and
checks the invariants. The robustness fuzzer feeds arbitrary bytes and mutated events and accepts
no exception but the project's typed errors, under tight limits.

A failing case is shrunk by hypothesis and can be written out as a conformance vector.

The package is split by job: ``truth`` (ground-truth calls), ``shapes`` (one renderer per wire shape),
``invariants`` (what must hold), ``robust`` (hostile input), ``run`` (hypothesis runs and vectors).
Importing this package itself needs no hypothesis, so the command line can list the shapes.
"""

SHAPES = ("openai-chat", "openai-responses", "anthropic", "gemini", "vertex", "ollama", "bedrock", "cohere")
"""The wire shapes the fuzzers render calls into (Vertex's partialArgs apart from Gemini's whole calls)."""
