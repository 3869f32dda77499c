#!/usr/bin/env python3
"""An HTTP server for the off-loopback tests (standard library only).

    python3 lan_server.py ADDRESS

It listens on ADDRESS (an IPv4 or IPv6 address of a test namespace) with a port the system
picks, prints the port as the first line on stdout, and serves until SIGTERM:

- GET /hello        text/plain "hello from the LAN\n"
- GET /file         application/octet-stream, 100000 bytes of a repeating pattern
- GET /events       text/event-stream: two events after the request's Last-Event-ID (0 when
                    absent), ids counting up, then the stream ends
- GET /ticks        text/event-stream: one event every 0.2 s, ids counting up from the
                    Last-Event-ID, until the client goes away

One line per request goes to stderr.
"""
import signal
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        sys.stderr.write("lan-server: %s\n" % (format % args))
        sys.stderr.flush()

    def body(self, content_type, data):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_events(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            return int(self.headers.get("Last-Event-ID", "0"))
        except ValueError:
            return 0

    def do_GET(self):
        if self.path == "/hello":
            self.body("text/plain", b"hello from the LAN\n")
        elif self.path == "/file":
            self.body("application/octet-stream", bytes(i % 251 for i in range(100000)))
        elif self.path == "/events":
            last = self.start_events()
            for n in (last + 1, last + 2):
                self.wfile.write(b"id: %d\ndata: event %d\n\n" % (n, n))
            self.wfile.flush()
            self.close_connection = True
        elif self.path == "/ticks":
            n = self.start_events()
            try:
                while True:
                    n += 1
                    self.wfile.write(b"id: %d\ndata: tick %d\n\n" % (n, n))
                    self.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass
            self.close_connection = True
        else:
            self.send_error(404)


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main():
    address = sys.argv[1]
    Server.address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
    server = Server((address, 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
