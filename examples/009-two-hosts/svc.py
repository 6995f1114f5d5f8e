"""A CPU-bound service for example 009: each request hashes for ROUNDS rounds (about 0.25 ms
per 1,000 on one core), a thread per connection, the work serialised by the interpreter's lock.
Usage: python3 svc.py ADDRESS PORT ROUNDS"""
import hashlib
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Svc(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head and the body go out in two writes: with Nagle's algorithm the body waited for the
    # client's delayed ACK (a p50 of 40-45 ms for 2-3 ms of work), as services behind gunicorn
    # or uvicorn do not.
    disable_nagle_algorithm = True
    rounds = int(sys.argv[3])

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


Server((sys.argv[1], int(sys.argv[2])), Svc).serve_forever()
