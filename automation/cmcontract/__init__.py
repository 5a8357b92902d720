"""The contract between the engine (`cmengine`), the library (`mlperf_llm`) and the steps (`script/*`).

What both sides must agree on, decided once, one fact per module (docs/engine.md, "The contract").
Standard library only; it imports neither the engine nor the library, so a step whose code reaches
it is keyed on it and on nothing of the engine's.
"""
