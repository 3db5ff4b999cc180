"""Ingest: find simulation folders, read what simulators write, and append it as events (docs/architecture.md#ingest)."""
