"""LLM providers: what a runner calls to perform a `CallLLM` effect (a model server, or recorded answers)."""
