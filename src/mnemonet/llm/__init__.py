"""Language-model providers, prompt templates and the NL <-> triples translation."""
