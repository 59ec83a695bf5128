"""One small module per graph engine: how a query runs, DDL, and result conversion."""

from mnemonet.store.dialects.base import GraphDriver, WriteOutcome

__all__ = ["GraphDriver", "WriteOutcome"]
