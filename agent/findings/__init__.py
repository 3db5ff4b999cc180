"""The analysis of a run, in one home: the facts read from the tools' results, the statements a section makes
of them, and the plan of each section (its kind, its tool calls). The offline writer, guided mode and chat
all state the same findings because they import them from here."""
