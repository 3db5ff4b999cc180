"""daemon layer."""
