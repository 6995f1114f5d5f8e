"""A CPU-bound HTTP server for bench/aa.sh: each request hashes for WORK rounds (about 0.25 ms
per 1,000 rounds on one core here), a thread per connection as http.server's ThreadingHTTPServer
runs them, the work serialised by the interpreter's lock as in a Python service.
Usage: python3 burn.py PORT WORK"""
import hashlib
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Burn(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    rounds = int(sys.argv[2])
    # The head and the body leave in two writes: with Nagle's algorithm the body waited for the
    # client's delayed ACK of the head, and p50 read 38-46 ms of the kernel's ACK timer (the
    # work is 2-5 ms). Python services behind gunicorn or uvicorn send with TCP_NODELAY.
    disable_nagle_algorithm = True

    def do_GET(self):
        h = b"loadlab"
        for _ in range(self.rounds):
            h = hashlib.sha256(h).digest()
        body = h.hex().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True


Server(("127.0.0.1", int(sys.argv[1])), Burn).serve_forever()
