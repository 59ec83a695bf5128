"""Cancellation that a library swallowed still stops a loop.

A driver that turns a ``CancelledError`` into its own error (a connection retry that catches it and
raises "cannot connect") leaves the task's cancellation request standing but its loop running: the
loop catches the error as a failed pass and goes round again, and whoever awaits the cancelled task
(a node's stop, ``asyncio.run``'s exit) waits forever. Loops that catch ``Exception`` to retry call
``raise_if_cancelled`` there.
"""

from __future__ import annotations

import asyncio


def raise_if_cancelled() -> None:
    """Raise ``CancelledError`` if the current task was asked to stop (``Task.cancelling``), whatever
    the code it was running made of the request."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
