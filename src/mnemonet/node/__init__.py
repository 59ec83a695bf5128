"""PeerNode: wires capabilities onto one process."""
