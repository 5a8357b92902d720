"""vLLM serving: command building (command), env edge (inputs), managed lifecycle (server),
machine-specific settings (tuning), a completions load generator (loadtest)."""
