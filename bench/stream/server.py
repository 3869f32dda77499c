#!/usr/bin/env python3
"""Serves one event stream of N events of about 100 bytes on 127.0.0.1, to every connection:
argv: PORT-FILE N [distinct]. Writes the chosen port to PORT-FILE, then serves until killed.
Every event has the ID 00000000, or with `distinct` its own number (00000001 up, the same
size), built once at the start, so a consumer that keeps the last ID sees it change."""
import socket, sys, threading

port_file, count = sys.argv[1], int(sys.argv[2])
distinct = len(sys.argv) > 3 and sys.argv[3] == "distinct"
event = b"id: 00000000\ndata: " + b"x" * 79 + b"\n\n"  # 100 bytes
assert len(event) == 100
block = event * 10_000
blocks = None
if distinct:
    blocks = [
        b"".join(b"id: %08d\ndata: " % i + b"x" * 79 + b"\n\n" for i in range(start + 1, min(start + 10_000, count) + 1))
        for start in range(0, count, 10_000)
    ]
head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"

def serve(conn):
    try:
        conn.recv(65536)
        conn.sendall(head)
        if blocks is not None:
            for piece in blocks:
                conn.sendall(piece)
            return
        sent = 0
        while sent < count:
            n = min(10_000, count - sent)
            conn.sendall(block if n == 10_000 else event * n)
            sent += n
    except OSError:
        pass
    finally:
        conn.close()

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
with open(port_file, "w") as f:
    f.write(str(listener.getsockname()[1]))
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
