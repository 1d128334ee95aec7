"""Seed: the Postgres + pgvector server, our schema in it, and the chunks table filled."""
