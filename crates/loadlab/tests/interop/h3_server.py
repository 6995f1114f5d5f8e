"""A small HTTP/3 server on aioquic (a QUIC stack nobody here wrote), for the interop test.

Usage: h3_server.py CERT KEY PORT. Answers every request 200 with "aioquic METHOD PATH BODY
X-ECHO", except: /status/N answers N, /moved redirects (302) to /hello, and /gzip answers its
text gzip-encoded.
"""
import gzip
import asyncio
import sys

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated


class Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.requests = {}

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self.requests[ev.stream_id] = (dict(ev.headers), bytearray())
            elif isinstance(ev, DataReceived) and ev.stream_id in self.requests:
                self.requests[ev.stream_id][1].extend(ev.data)
            else:
                continue
            if ev.stream_ended:
                self.respond(ev.stream_id)

    def respond(self, stream_id):
        headers, body = self.requests.pop(stream_id)
        path = headers.get(b":path", b"/")
        out = b"aioquic " + headers.get(b":method", b"") + b" " + path + b" " + bytes(body)
        if b"x-echo" in headers:
            out += b" " + headers[b"x-echo"]
        status, extra = b"200", []
        if path.startswith(b"/status/"):
            status = path[len(b"/status/"):]
        elif path == b"/moved":
            status, extra = b"302", [(b"location", b"/hello")]
        elif path == b"/gzip":
            out, extra = gzip.compress(out), [(b"content-encoding", b"gzip")]
        self.h3.send_headers(
            stream_id,
            [(b":status", status), (b"server", b"aioquic"), (b"content-length", str(len(out)).encode())] + extra,
        )
        self.h3.send_data(stream_id, out, end_stream=True)
        self.transmit()


async def main(cert, key, port):
    config = QuicConfiguration(alpn_protocols=H3_ALPN, is_client=False)
    config.load_cert_chain(cert, key)
    await serve("127.0.0.1", port, configuration=config, create_protocol=Server)
    print("ready", flush=True)
    await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
