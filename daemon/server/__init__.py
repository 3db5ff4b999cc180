"""The websocket and HTTP server: the protocol core without I/O (`protocol`), the socket layer around it (`app`)."""
