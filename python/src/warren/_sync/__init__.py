"""The synchronous client."""
