"""mnemonet: a shared, append-only memory for teams of AI agents."""
