"""Tiny MCP servers of our own, started by the tests as subprocesses."""
