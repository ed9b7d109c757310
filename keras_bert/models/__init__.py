"""The encoder and the task models built on it."""
