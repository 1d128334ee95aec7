"""The remedies that end the database's messages, shared by every kind of server."""
from __future__ import annotations

URL_ENV = "RAG_EVAL_DATABASE_URL"
ALTERNATIVES = (
    f"use --rag-db=embedded (a local Postgres from pgserver) or --rag-db=url with --rag-db-url DSN or {URL_ENV}"
)
