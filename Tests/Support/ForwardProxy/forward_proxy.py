#!/usr/bin/env python3
"""A small forward HTTP proxy for the HTTP tools' tests, on loopback (or a namespace's address).

It serves absolute-form requests (GET http://host:port/path HTTP/1.1) and CONNECT tunnels,
checks Basic proxy authentication when --auth is given, and appends every byte it receives
from clients to --log, so a test can assert what the proxy saw (and what it never saw).
--connect-reply makes CONNECT fail on purpose: 502, a garbage reply, or a close. It prints
"PORT n" once listening, and exits by itself after --lifetime seconds.
"""
import argparse
import base64
import os
import socket
import socketserver
import sys
import threading

ARGS = None
LOG_LOCK = threading.Lock()


def log(data):
    if ARGS.log and data:
        with LOG_LOCK, open(ARGS.log, "ab") as handle:
            handle.write(data)


def note(line):
    if ARGS.events:
        with LOG_LOCK, open(ARGS.events, "a") as handle:
            handle.write(line + "\n")


def relay(source, destination, record):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            if record:
                log(data)
            destination.sendall(data)
    except OSError:
        pass
    finally:
        try:
            destination.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def pipe_both(client, upstream):
    back = threading.Thread(target=relay, args=(upstream, client, False), daemon=True)
    back.start()
    relay(client, upstream, True)
    back.join(timeout=ARGS.lifetime)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        client = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            data = client.recv(65536)
            if not data:
                log(head)
                return
            head += data
            if len(head) > 1 << 20:
                return
        log(head)
        head_bytes, rest = head.split(b"\r\n\r\n", 1)
        lines = head_bytes.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        fields = [line.split(":", 1) for line in lines[1:] if ":" in line]
        if ARGS.auth is not None:
            expected = "Basic " + base64.b64encode(ARGS.auth.encode()).decode()
            given = [value.strip() for name, value in fields if name.lower() == "proxy-authorization"]
            if given != [expected]:
                note("407 " + method + " " + target)
                client.sendall(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\n"
                    b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                return
        if method == "CONNECT":
            note("CONNECT " + target)
            if ARGS.connect_reply == "502":
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            if ARGS.connect_reply == "garbage":
                client.sendall(b"\x00\x01garbage, not HTTP at all\r\n\r\n")
                return
            if ARGS.connect_reply == "close":
                return
            host, port = target.rsplit(":", 1)
            try:
                upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
            except OSError:
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            upstream.settimeout(None)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            pipe_both(client, upstream)
            upstream.close()
            return
        if not target.startswith("http://"):
            client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        note(method + " " + target)
        authority, _, path = target[len("http://"):].partition("/")
        host, _, port = authority.rpartition(":") if authority.rfind(":") > authority.rfind("]") else (authority, "", "80")
        kept = [f"{name}:{value}" for name, value in fields
                if name.lower() not in ("proxy-authorization", "proxy-connection")]
        request = "\r\n".join([f"{method} /{path} {version}"] + kept) + "\r\n\r\n"
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        upstream.settimeout(None)
        upstream.sendall(request.encode("latin-1") + rest)
        pipe_both(client, upstream)
        upstream.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--auth")
    parser.add_argument("--connect-reply", choices=["ok", "502", "garbage", "close"], default="ok")
    parser.add_argument("--log")
    parser.add_argument("--events")
    parser.add_argument("--lifetime", type=float, default=300)
    ARGS = parser.parse_args()
    if ":" in ARGS.bind:
        Server.address_family = socket.AF_INET6
    server = Server((ARGS.bind, 0), Handler)
    threading.Timer(ARGS.lifetime, lambda: os._exit(0)).start()
    sys.stdout.write(f"PORT {server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
