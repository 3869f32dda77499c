#!/usr/bin/env python3
"""A small HTTP server on 127.0.0.1 for the demo's Rastrillo steps (standard library only).

    python3 examples/demo/server.py [--files DIR] [--events N] [--interval SECONDS]

It listens on a port the system picks, prints its base URL (http://127.0.0.1:PORT) as the
first line on stdout, and serves until SIGTERM or SIGINT:

- GET /api/scores.json     a JSON document: the scoreboard's games
- GET /api/version         the JSON {"name":"demo-server","version":"1.0.0"}
- GET /events              text/event-stream: N score-changed events (default 3), one every
                           SECONDS (default 0.2), each with an id; then the stream ends. A
                           request with Last-Event-ID gets only the events after that id.
- GET /files/NAME          the file NAME in DIR (no subdirectories), as application/octet-stream

Anything else is 404. One line per request goes to stderr.
"""
import argparse
import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GAMES = [
    {"game-id": "final", "home": 2, "away": 1, "period": "second"},
    {"game-id": "semifinal", "home": 0, "away": 3, "period": "final"},
]


def score_events(count):
    """The stream's events: the home side of "final" scores `count` times."""
    return [(str(i), json.dumps({"game-id": "final", "home": 2 + i, "away": 1}, separators=(",", ":")))
            for i in range(1, count + 1)]


class Handler(BaseHTTPRequestHandler):
    server_version = "demo-server/1.0"

    def log_message(self, format, *args):
        sys.stderr.write("demo-server: %s\n" % (format % args))

    def send_body(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        options = self.server.options
        if self.path == "/api/scores.json":
            self.send_body(200, "application/json", json.dumps({"games": GAMES}).encode() + b"\n")
        elif self.path == "/api/version":
            self.send_body(200, "application/json", b'{"name":"demo-server","version":"1.0.0"}\n')
        elif self.path == "/events":
            self.send_events(options)
        elif self.path.startswith("/files/") and options.files:
            name = self.path[len("/files/"):]
            path = os.path.join(options.files, name)
            if not name or "/" in name or name.startswith(".") or not os.path.isfile(path):
                self.send_body(404, "text/plain", b"no such file\n")
                return
            with open(path, "rb") as f:
                self.send_body(200, "application/octet-stream", f.read())
        else:
            self.send_body(404, "text/plain", b"not found\n")

    def send_events(self, options):
        last = self.headers.get("Last-Event-ID", "")
        events = score_events(options.events)
        if last.isdigit():
            events = [e for e in events if int(e[0]) > int(last)]
        # HTTP/1.0 without Content-Length: the body (the stream) ends when the connection closes.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(b": demo stream\n\n")
        self.wfile.flush()
        for event_id, data in events:
            time.sleep(options.interval)
            self.wfile.write(f"id: {event_id}\nevent: score-changed\ndata: {data}\n\n".encode())
            self.wfile.flush()


def main():
    parser = argparse.ArgumentParser(description="The demo's loopback HTTP server.")
    parser.add_argument("--files", help="serve the files of this directory under /files/")
    parser.add_argument("--events", type=int, default=3, help="events per stream (default 3)")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between events")
    options = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.options = options
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
