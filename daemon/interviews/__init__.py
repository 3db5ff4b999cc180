"""Interviews with simulated agents: live over the simulator's file RPC, else in persona (docs/formats.md#interview-file-rpc)."""
