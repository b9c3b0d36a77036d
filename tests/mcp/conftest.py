"""pytest fixtures for the MCP client tests (the helpers live in harness.py)."""

from harness import anyio_backend, workspace  # noqa: F401  (fixtures)
