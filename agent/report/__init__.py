"""The report agent: a sans-I/O core that folds its stream and decides the next effect, and the runner that performs it."""
