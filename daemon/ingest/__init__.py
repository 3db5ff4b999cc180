"""Ingest: find simulation folders, read what simulators write, and append it as events (DESIGN.md section 3)."""
