#!/usr/bin/env python3
"""Serves one event stream on 127.0.0.1, to every connection, until killed. Writes the chosen
port to PORT-FILE first.

  server.py PORT-FILE N [distinct]     N events of 100 bytes, one data line, no event name: every
                                       event has the ID 00000000, or with `distinct` its own number
                                       (00000001 up, the same size), built once at the start, so a
                                       consumer that keeps the last ID sees it change
  server.py PORT-FILE N mix            N events of a realistic mix (mix_event below), built once
  server.py PORT-FILE N paced-plain RATE
  server.py PORT-FILE N paced-mix RATE N events, RATE a second, each written as it is made with
                                       the monotonic time of its write (CLOCK_MONOTONIC, ns) in its
                                       data as `@T<19 digits>@`, for latency-reader.c; paced-plain
                                       keeps the 100-byte shape, paced-mix the mix
"""
import random
import socket
import sys
import threading
import time

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
NAMES = [b"score", b"player-joined", b"state", b"message", b"tick"]
PLACEHOLDER = b"@T%019d@" % 0
WORDS = [b"goal", b"home", b"away", b"minute", b"corner", b"save", b"pass", b"the", b"keeper", b"free kick"]


def plain_event(number, stamp=None):
    """The benchmark's first shape: 100 bytes, `id` and one `data` line."""
    filler = 79 if stamp is None else 79 - 22
    data = (b"" if stamp is None else b"@T%019d@" % stamp) + b"x" * filler
    event = b"id: %08d\ndata: " % number + data + b"\n\n"
    assert len(event) == 100
    return event


def mix_event(rng, number, stamp=None):
    """A realistic event: an event name (four in five), an ID, JSON data of 40-2000 bytes
    (log-uniform, so most are short; with a time stamp, 22 bytes more) with quotes the JSON
    output must escape, its data on two lines one time in five, and a comment line before one
    event in ten."""
    size = int(40 * 50 ** rng.random())
    text = b""
    while len(text) < size:
        text += rng.choice(WORDS) + b" "
    stamped = b"" if stamp is None else b'"at":"@T%019d@",' % stamp
    head = b'{"seq":%d,%s"kind":"%s","text":"' % (number, stamped, rng.choice(NAMES))
    body = text[:max(0, size - len(head) - 2)].rstrip() + b'"}'
    lines = []
    if rng.random() < 0.1:
        lines.append(b": keep-alive")
    if rng.random() < 0.8:
        lines.append(b"event: " + rng.choice(NAMES))
    lines.append(b"id: %08d" % number)
    if rng.random() < 0.2:
        lines += [b"data: " + head, b"data: " + body]
    else:
        lines.append(b"data: " + head + body)
    return b"\n".join(lines) + b"\n\n"


def built_blocks(count, make):
    """The whole stream, built once, in blocks of 10,000 events."""
    return [b"".join(make(i) for i in range(start + 1, min(start + 10_000, count) + 1))
            for start in range(0, count, 10_000)]


def main():
    port_file, count = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "same"
    rate = float(sys.argv[4]) if mode.startswith("paced-") else None
    rng = random.Random(31)
    if mode == "distinct":
        blocks = built_blocks(count, plain_event)
    elif mode == "mix":
        blocks = built_blocks(count, lambda i: mix_event(rng, i))
    elif mode == "same":
        block = plain_event(0) * 10_000
        blocks = [block] * (count // 10_000) + ([plain_event(0) * (count % 10_000)] if count % 10_000 else [])
    elif mode not in ("paced-plain", "paced-mix"):
        sys.exit(f"server.py: unknown mode {mode}")

    def serve(conn):
        try:
            conn.recv(65536)
            conn.sendall(HEAD)
            if rate is None:
                for piece in blocks:
                    conn.sendall(piece)
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # Made before the first write, each split around its time stamp, so a write's time is
            # taken just before it (one concatenation between them).
            events = random.Random(31)
            made = [(plain_event(number, 0) if mode == "paced-plain" else mix_event(events, number, 0)).split(PLACEHOLDER)
                    for number in range(1, count + 1)]
            start = time.monotonic()
            for number, (before, after) in enumerate(made, 1):
                pause = start + number / rate - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                conn.sendall(b"%s@T%019d@%s" % (before, time.monotonic_ns(), after))
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


if __name__ == "__main__":
    main()
