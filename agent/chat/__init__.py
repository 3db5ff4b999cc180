"""Chat with a report: the same sans-I/O split as the report agent, on a chat's own stream."""
