"""The report tools: what the model may call, what each answers from the read models, and how it reads back."""
