"""The offline writer: a model-free provider that writes reports and chat answers from the findings alone."""
