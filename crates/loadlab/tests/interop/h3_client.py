"""A small HTTP/3 client on aioquic, for the interop test: GETs URL PATH on 127.0.0.1:PORT,
trusting CA, and prints "STATUS ALT-SVC BODY" of each of COUNT requests on one connection.

Usage: h3_client.py PORT CA PATH COUNT
"""
import asyncio
import sys

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.waiting = {}

    def quic_event_received(self, event):
        for ev in self.h3.handle_event(event):
            if not isinstance(ev, (HeadersReceived, DataReceived)) or ev.stream_id not in self.waiting:
                continue
            future, answer = self.waiting[ev.stream_id]
            if isinstance(ev, HeadersReceived):
                answer["headers"] = dict(ev.headers)
            else:
                answer["body"] += ev.data
            if ev.stream_ended:
                del self.waiting[ev.stream_id]
                future.set_result(answer)

    async def get(self, authority, path):
        stream_id = self._quic.get_next_available_stream_id()
        self.h3.send_headers(
            stream_id,
            [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority), (b":path", path)],
            end_stream=True,
        )
        future = asyncio.get_running_loop().create_future()
        self.waiting[stream_id] = (future, {"headers": {}, "body": b""})
        self.transmit()
        return await asyncio.wait_for(future, 10)


async def main(port, ca, path, count):
    config = QuicConfiguration(alpn_protocols=H3_ALPN, is_client=True, server_name="127.0.0.1")
    config.load_verify_locations(ca)
    async with connect("127.0.0.1", port, configuration=config, create_protocol=Client) as client:
        for _ in range(count):
            answer = await client.get(f"127.0.0.1:{port}".encode(), path.encode())
            status = answer["headers"].get(b":status", b"?").decode()
            print(status, answer["body"].decode(errors="replace"), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])))
