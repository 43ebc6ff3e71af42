"""A TCP proxy between Kafka clients and one broker that understands just enough of the
protocol (the frame length and the request header) to misbehave on purpose around
Produce requests:

- drop: forward the request, throw its response away and cut the connection, so the
  batch is written but the client never learns it and sends it again;
- cut: forward the first half of the request and cut the connection;
- delay: hold the response back for a while before passing it on.

Which Produce request gets what follows a fixed schedule over the proxy's count of
Produce requests, so a run is repeatable. The broker must advertise the proxy's
address (`--advertise`), or clients would go around it after the first Metadata."""

import asyncio
import struct
import threading

from conftest import free_port

PRODUCE = 0


class ChaosProxy:
    def __init__(self, upstream_port, drop_every=7, cut_every=11, delay_every=5, delay_s=0.05):
        self.upstream_port = upstream_port
        self.schedule = [(drop_every, "drop"), (cut_every, "cut"), (delay_every, "delay")]
        self.delay_s = delay_s
        self.produce_requests = 0
        self.counts = {"drop": 0, "cut": 0, "delay": 0}
        self.enabled = True
        self._cuts = set()
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self._thread.start()
        assert self._ready.wait(10), "proxy did not start"
        return self

    def stop(self):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self):
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_forever()
        server.close()
        # Cutting every connection ends its tasks without cancelling them.
        for cut in list(self._cuts):
            cut()
        tasks = asyncio.all_tasks(self._loop)
        self._loop.run_until_complete(asyncio.wait(tasks, timeout=5) if tasks else asyncio.sleep(0))
        self._loop.close()

    def _action(self):
        """What to do with the next Produce request (only one thing per request)."""
        self.produce_requests += 1
        if not self.enabled:
            return None
        for every, action in self.schedule:
            if every and self.produce_requests % every == 0:
                self.counts[action] += 1
                return action
        return None

    async def _serve(self, client_reader, client_writer):
        try:
            broker_reader, broker_writer = await asyncio.open_connection(
                "127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.close()
            return
        # What to do with each response, in request order (Kafka answers in order).
        pending = asyncio.Queue()
        closed = asyncio.Event()

        def cut():
            closed.set()
            self._cuts.discard(cut)
            for writer in (client_writer, broker_writer):
                writer.transport.abort()

        self._cuts.add(cut)

        async def requests():
            while not closed.is_set():
                frame = await read_frame(client_reader)
                if frame is None:
                    break
                api_key = struct.unpack_from(">h", frame, 4)[0]
                # acks=0 requests get no response: no action applies to them, and
                # they are not counted.
                answered = api_key != PRODUCE or not acks_zero(frame)
                action = self._action() if api_key == PRODUCE and answered else None
                if action == "cut":
                    broker_writer.write(frame[: len(frame) // 2])
                    await broker_writer.drain()
                    await asyncio.sleep(0.01)
                    cut()
                    break
                broker_writer.write(frame)
                await broker_writer.drain()
                if answered:
                    await pending.put(action)
            cut()

        async def responses():
            while not closed.is_set():
                frame = await read_frame(broker_reader)
                if frame is None:
                    break
                action = await pending.get()
                if action == "drop":
                    cut()
                    break
                if action == "delay":
                    await asyncio.sleep(self.delay_s)
                client_writer.write(frame)
                await client_writer.drain()
            cut()

        tasks = [asyncio.ensure_future(requests()), asyncio.ensure_future(responses())]
        try:
            # The first to finish has cut the connection, which ends the other.
            await asyncio.wait(tasks, return_when=asyncio.ALL_COMPLETED)
        finally:
            cut()


async def read_frame(reader):
    """One size-prefixed frame (size included), or None when the peer is gone."""
    try:
        size_bytes = await reader.readexactly(4)
        size = struct.unpack(">i", size_bytes)[0]
        return size_bytes + await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError, OSError):
        return None


def acks_zero(frame):
    """Whether a Produce request asks for no response (acks=0). The acks field follows
    the request header, whose client id length sits at a fixed place; Produce v9+ has
    a tagged-field section and a compact transactional id, v3-v8 a plain one."""
    version = struct.unpack_from(">h", frame, 6)[0]
    client_id_len = struct.unpack_from(">h", frame, 12)[0]
    at = 14 + max(client_id_len, 0)
    if version >= 9:
        at += 1  # empty header tagged fields
        txn_len, at = read_uvarint(frame, at)
        at += max(txn_len - 1, 0)
    else:
        txn_len = struct.unpack_from(">h", frame, at)[0]
        at += 2 + max(txn_len, 0)
    return struct.unpack_from(">h", frame, at)[0] == 0


def read_uvarint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
