"""Interviews with simulated agents: live over the simulator's file RPC, else in persona (FORMATS.md 1.5)."""
