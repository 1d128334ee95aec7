"""Settings: `[tool.ragretrieval]` (or a --rag-config file) read and validated at the boundary."""
