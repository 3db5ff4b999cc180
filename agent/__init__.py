"""The report agent and chat, their tools, checks and findings: everything that reads a run and writes about it."""
