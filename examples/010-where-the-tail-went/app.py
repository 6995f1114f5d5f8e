"""A service instrumented with the OpenTelemetry SDK as its authors would: a server span per
request continuing the caller's trace (W3C traceparent), a db.query span inside it that takes
2 ms, or 40 ms for every SLOW_EVERY-th request, and a render span of 1 ms. Spans go out through
the SDK's batch processor and OTLP/HTTP exporter, configured only by the standard variables
(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_SERVICE_NAME, OTEL_BSP_SCHEDULE_DELAY).
Usage: python3 app.py PORT [SLOW_EVERY]"""
import itertools
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("traced-app")
SLOW_EVERY = int(sys.argv[2]) if len(sys.argv) > 2 else 33
counter = itertools.count()


class App(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        context = propagate.extract({k.lower(): v for k, v in self.headers.items()})
        with tracer.start_as_current_span("GET /", context=context, kind=SpanKind.SERVER):
            n = next(counter)
            with tracer.start_as_current_span("db.query"):
                time.sleep(0.040 if n % SLOW_EVERY == SLOW_EVERY - 1 else 0.002)
            with tracer.start_as_current_span("render"):
                time.sleep(0.001)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


try:
    Server(("127.0.0.1", int(sys.argv[1])), App).serve_forever()
finally:
    provider.shutdown()
