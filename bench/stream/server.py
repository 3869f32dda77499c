#!/usr/bin/env python3
"""Serves one event stream of N events of about 100 bytes on 127.0.0.1, to every connection:
argv: PORT-FILE N. Writes the chosen port to PORT-FILE, then serves until killed."""
import socket, sys, threading

port_file, count = sys.argv[1], int(sys.argv[2])
event = b"id: 00000000\ndata: " + b"x" * 79 + b"\n\n"  # 100 bytes
assert len(event) == 100
block = event * 10_000
head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"

def serve(conn):
    try:
        conn.recv(65536)
        conn.sendall(head)
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
