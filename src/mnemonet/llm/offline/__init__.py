"""The offline, rule-based translator (no model, no network): see ``offline.model``."""
