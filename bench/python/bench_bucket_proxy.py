"""The counting proxy of bench_bucket.py and bench_ranks.py: an HTTP/1.1 forwarder on
127.0.0.1, in the parent process on a thread of its own, in front of the S3 server, counting
every request and every answer's body bytes, and standing for a network where asked. The
readers' processes ask it for its counts at GET COUNTS. The lowest of the bench_bucket
modules: it imports none of them.
"""

import asyncio
import json
import queue
import socket
import threading
import urllib.request
from typing import Any, Dict, Optional, Tuple

COUNTS = "/.bench-counts"  # the proxy's own path (no bucket name starts with a dot)


class CountingProxy:
    """An HTTP/1.1 forwarder on 127.0.0.1 in front of `upstream` that counts every request and
    the bytes of every response body. Requests and answers go through byte for byte (the Host
    the client signed with included), bodies in pieces as they come; each client connection
    keeps one connection to the server. It parses no more of a message than where it ends,
    on an event loop of its own (a thread): a forwarder that parsed each message on threads
    of its own halved the pace of the reads that go a record a request. GET COUNTS answers
    the counts so far as JSON.

    It can stand for a network as well: `latency` seconds before each answer, and every
    connection's answer bodies through one link of `rate` bytes a second (0: as fast as the
    loopback goes)."""

    def __init__(self, upstream: str, latency: float = 0.0, rate: float = 0.0) -> None:
        host, port = upstream.rsplit("//", 1)[1].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.requests = 0
        self.bytes = 0
        self.latency = latency
        self.rate = rate
        self.link_free = 0.0  # when the modelled link is done with the bytes given it so far
        self.loop = asyncio.new_event_loop()
        started: "queue.Queue[Any]" = queue.Queue()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        result = started.get()
        if isinstance(result, BaseException):
            raise result
        self.url = f"http://127.0.0.1:{result}"

    def _run(self, started: "queue.Queue[Any]") -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.server = self.loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256, limit=1 << 20))
        except BaseException as err:  # the caller raises it
            started.put(err)
            return
        started.put(self.server.sockets[0].getsockname()[1])
        self.loop.run_forever()

    def counts(self) -> Tuple[int, int]:
        return self.requests, self.bytes

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    async def _connect(self) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(*self.upstream, limit=1 << 20)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    async def _serve(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        to_client.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server: Optional[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = None
        try:
            while True:
                try:
                    head = await client.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return  # the client closed its connection between requests
                method, target = head.split(b" ", 2)[:2]
                fields = _fields(head)
                if target == COUNTS.encode():
                    body = json.dumps({"requests": self.requests, "bytes": self.bytes}).encode()
                    to_client.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                    await to_client.drain()
                    continue
                if b"chunked" in fields.get(b"transfer-encoding", b""):
                    to_client.write(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    await to_client.drain()
                    return  # no reader this bench runs sends a chunked request
                length = int(fields.get(b"content-length", b"0"))
                request = head + (await client.readexactly(length) if length else b"")
                for attempt in range(2):
                    fresh = server is None
                    if server is None:
                        server = await self._connect()
                    try:
                        server[1].write(request)
                        await server[1].drain()
                        answer = await server[0].readuntil(b"\r\n\r\n")
                        break
                    except (asyncio.IncompleteReadError, ConnectionError):
                        # A kept connection the server closed meanwhile: once more on a new one.
                        server[1].close()
                        server = None
                        if fresh or attempt:
                            raise
                self.requests += 1
                if self.latency:
                    await asyncio.sleep(self.latency)
                # Interim answers (100 Continue) come before the real one.
                while int(answer.split(b" ", 2)[1]) < 200:
                    to_client.write(answer)
                    answer = await server[0].readuntil(b"\r\n\r\n")
                status = int(answer.split(b" ", 2)[1])
                reply = _fields(answer)
                to_client.write(answer)
                upstream_reader = server[0]
                if method == b"HEAD" or status in (204, 304):
                    pass
                elif b"content-length" in reply:
                    await self._relay(upstream_reader, to_client, int(reply[b"content-length"]))
                elif b"chunked" in reply.get(b"transfer-encoding", b""):
                    while True:
                        line = await upstream_reader.readuntil(b"\r\n")
                        to_client.write(line)
                        size = int(line.split(b";")[0], 16)
                        if size == 0:
                            while (line := await upstream_reader.readuntil(b"\r\n")) != b"\r\n":
                                to_client.write(line)
                            to_client.write(line)
                            break
                        await self._relay(upstream_reader, to_client, size)
                        to_client.write(await upstream_reader.readexactly(2))
                else:
                    # Delimited by the end of the connection.
                    while chunk := await upstream_reader.read(self._piece()):
                        self.bytes += len(chunk)
                        await self._pace(len(chunk))
                        to_client.write(chunk)
                        await to_client.drain()
                    await to_client.drain()
                    return
                await to_client.drain()
                if b"close" in reply.get(b"connection", b"").lower():
                    server[1].close()
                    server = None
                if b"close" in fields.get(b"connection", b"").lower():
                    return
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return  # either side cut a message short: neither connection can go on
        finally:
            if server is not None:
                server[1].close()
            to_client.close()

    def _piece(self) -> int:
        # Bytes read from the server at a time: a link's pace in steps of 5 ms at most.
        return max(16 << 10, min(1 << 20, int(self.rate / 200))) if self.rate else 1 << 20

    async def _pace(self, size: int) -> None:
        """Waits until the modelled link has carried `size` more bytes after all before them."""
        if not self.rate:
            return
        now = self.loop.time()
        self.link_free = max(now, self.link_free) + size / self.rate
        await asyncio.sleep(self.link_free - now)

    async def _relay(self, source: asyncio.StreamReader, target: asyncio.StreamWriter, length: int) -> None:
        while length:
            chunk = await source.read(min(length, self._piece()))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", length)
            self.bytes += len(chunk)
            length -= len(chunk)
            await self._pace(len(chunk))
            target.write(chunk)
            await target.drain()


def _fields(head: bytes) -> Dict[bytes, bytes]:
    """The header fields of a message's head, by lower-case name (the last of a repeated one)."""
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            fields[name.strip().lower()] = value.strip()
    return fields


def proxy_counts(control: str) -> Tuple[int, int]:
    """(requests, bytes) the proxy counted so far, asked from a reader's process (never
    through a proxy of the environment)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(control + COUNTS, timeout=30) as answer:
        counts = json.loads(answer.read())
    return counts["requests"], counts["bytes"]
