"""Two Linux network namespaces joined by a veth pair the test can cut, and a relay into them.

Layout (``x`` is the /16 picked at creation, ``tag`` unique per run)::

    ns mnemonet-a-tag  x.0.1 ===(cross veth)=== x.0.2  ns mnemonet-b-tag
           | x.1.2                                   | x.2.2
           +--(veth)-- x.1.1  root namespace  x.2.1 --(veth)--+

The root namespace (the test, the session's databases) reaches each side
over its own veth; the sides reach each other only over the cross veth: no
side has a route through the root namespace. ``cut`` gives both ends of the
cross veth a zero-length FIFO queue, so every packet between the sides is
dropped silently, as on a partitioned network (TCP retransmits, connects
time out, open connections stay up until their own timeouts); ``heal``
removes it. Where that queue discipline is missing, the cross veth is set
down instead (the kernel then fails sends at once).

Processes in a namespace reach a root-namespace server on 127.0.0.1 through
``TcpRelay``; Unix sockets (the embedded PostgreSQL's) need no relay.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
import subprocess
from dataclasses import dataclass


class NetnsUnavailable(RuntimeError):
    """This machine cannot create network namespaces (not root, no ``ip``, or the kernel refused)."""


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if result.returncode != 0:
        raise subprocess.CalledProcessError(result.returncode, ["ip", *args], result.stdout, result.stderr)


async def _run(*argv: str) -> bool:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    return await proc.wait() == 0


def _free_prefix() -> str:
    """A 10.x /16 that no address or route of the root namespace overlaps (the default route aside)."""
    listed = ""
    for what in ("addr", "route"):
        listed += subprocess.run(["ip", "-4", "-o", what], capture_output=True, text=True, timeout=10).stdout
    networks = []
    for word in listed.split():
        with contextlib.suppress(ValueError):
            networks.append(ipaddress.ip_network(word, strict=False))
    for second in range(231, 255):
        candidate = ipaddress.ip_network(f"10.{second}.0.0/16")
        if not any(network.overlaps(candidate) for network in networks):
            return f"10.{second}"
    raise NetnsUnavailable("no free 10.x.0.0/16 for the namespaces")


@dataclass(frozen=True)
class Side:
    """One namespace: where its nodes listen, and how the root namespace reaches them."""

    netns: str
    cross_dev: str  # this side's end of the cross veth
    root_dev: str  # the root namespace's end of this side's own veth
    peer_ip: str  # on the cross veth: the address nodes advertise to each other
    root_ip: str  # the address the root namespace reaches this side at
    gateway_ip: str  # the root namespace's end of this side's veth: where relays listen

    def exec_argv(self) -> list[str]:
        """Prefix that runs a command inside this side's namespace."""
        return ["ip", "netns", "exec", self.netns]


def unavailable() -> str | None:
    """Why this machine cannot make network namespaces (not root, no ``ip``, the kernel refuses), or None.

    Asked once, before the tests run, by adding and deleting a namespace.
    """
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no `ip` binary (iproute2)"
    probe = f"mnemonet-probe-{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
        return f"`ip netns add` failed: {detail}"
    _ip("netns", "delete", probe)
    return None


class NetnsPair:
    """Side A and side B: ``create`` them, ``cut``/``heal`` the link between them, ``destroy`` everything."""

    def __init__(self, tag: str) -> None:
        x = _free_prefix()
        self.a = Side(f"mnemonet-a-{tag}", f"mnx{tag}a", f"mnr{tag}a", f"{x}.0.1", f"{x}.1.2", f"{x}.1.1")
        self.b = Side(f"mnemonet-b-{tag}", f"mnx{tag}b", f"mnr{tag}b", f"{x}.0.2", f"{x}.2.2", f"{x}.2.1")
        self.cut_method = ""

    def create(self) -> None:
        """Namespaces, veths and addresses; on failure whatever was made is removed again."""
        a, b = self.a, self.b
        try:
            for side in (a, b):
                _ip("netns", "add", side.netns)
                _ip("-n", side.netns, "link", "set", "lo", "up")
            _ip("link", "add", a.cross_dev, "type", "veth", "peer", "name", b.cross_dev)
            self._place(a.cross_dev, a, a.peer_ip)
            self._place(b.cross_dev, b, b.peer_ip)
            for side in (a, b):
                inner = side.root_dev.replace("mnr", "mns", 1)
                _ip("link", "add", side.root_dev, "type", "veth", "peer", "name", inner)
                self._place(side.root_dev, None, side.gateway_ip)
                self._place(inner, side, side.root_ip)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            self.destroy()
            detail = exc.stderr.strip() if isinstance(exc, subprocess.CalledProcessError) else str(exc)
            raise NetnsUnavailable(f"`{' '.join(exc.cmd)}` failed: {detail}") from None

    @staticmethod
    def _place(dev: str, side: Side | None, address: str) -> None:
        """Move ``dev`` into ``side``'s namespace (None: it stays in the root one), address it, bring it up."""
        where = []
        if side is not None:
            _ip("link", "set", dev, "netns", side.netns)
            where = ["-n", side.netns]
        _ip(*where, "addr", "add", f"{address}/24", "dev", dev)
        _ip(*where, "link", "set", dev, "up")

    async def cut(self) -> None:
        """Drop every packet between the sides."""
        for side in (self.a, self.b):
            if await _run(*side.exec_argv(), "tc", "qdisc", "replace", "dev", side.cross_dev, "root",
                          "pfifo", "limit", "0"):
                self.cut_method = "zero-length queue on the cross veth: silent drop"
            elif await _run("ip", "-n", side.netns, "link", "set", side.cross_dev, "down"):
                self.cut_method = "cross veth set down"
            else:
                raise RuntimeError(f"could not cut {side.cross_dev} in {side.netns}")

    async def heal(self) -> None:
        """Let packets through again."""
        for side in (self.a, self.b):
            await _run(*side.exec_argv(), "tc", "qdisc", "del", "dev", side.cross_dev, "root")
            if not await _run("ip", "-n", side.netns, "link", "set", side.cross_dev, "up"):
                raise RuntimeError(f"could not bring {side.cross_dev} in {side.netns} back up")

    def destroy(self) -> None:
        """Delete both namespaces (their veths go with them) and any veth end left in the root namespace.

        Safe to call more than once and after a partial ``create``; names carry this run's tag.
        """
        for side in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", side.netns], capture_output=True, timeout=10)
        for dev in (self.a.cross_dev, self.a.root_dev, self.b.root_dev):
            subprocess.run(["ip", "link", "del", dev], capture_output=True, timeout=10)


class TcpRelay:
    """Forwards every TCP connection accepted on some addresses to one target address."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._servers: list[asyncio.Server] = []
        self._pipes: set[asyncio.Task[None]] = set()

    async def start(self, hosts: list[str]) -> int:
        """Listen on one port on every host; returns the port."""
        port = 0
        for host in hosts:
            server = await asyncio.start_server(self._accept, host, port)
            port = server.sockets[0].getsockname()[1]
            self._servers.append(server)
        return port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        for pipe in (self._pipe(reader, up_writer), self._pipe(up_reader, writer)):
            task = asyncio.create_task(pipe)
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass  # the other end went away: close ours
        finally:
            writer.close()

    async def close(self) -> None:
        """Stop listening and drop every relayed connection."""
        for server in self._servers:
            server.close()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
