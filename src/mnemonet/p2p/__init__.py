"""Envelope codec, transport, membership, routing, RPC, events."""
