"""The web dashboard: one static page served by a node, fed by ``/v1/ws``, ``/v1/graph`` and ``/v1/stats``; it
corrects memory through the client API (``/v1/retract``, ``/v1/forget``)."""

from mnemonet.web.routes import mount_dashboard

__all__ = ["mount_dashboard"]
