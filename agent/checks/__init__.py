"""Checks of what a text says: figures, names, relations and quotes against the evidence it was written from."""
