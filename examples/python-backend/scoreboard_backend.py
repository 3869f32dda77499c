#!/usr/bin/env python3
"""The scoreboard backend of examples/schema/rivet.rktd in Python, standard library only.

It is written from docs/protocol.md (RVT1 part) alone (the framing code is the reference reader and
writer of its section 9), to show that a backend can be any program speaking RVT1 on stdin
and stdout. Run it under rivetd exactly like the Swift one:

    rivetd --backend python3 examples/python-backend/scoreboard_backend.py \
           --schema examples/schema/rivet.rktd --listen 127.0.0.1:7400 --application-id ID

Behaviour (the same as examples/scoreboard-backend):
- current-score {"game-id"}: the game's score; every game starts 0-0 in the first period.
- refresh-score {"game-id"}: the home side scores once, the event score-changed carries the
  new score, and the answer is {}.
- state home-team (a string, "Lions" at start): reads answer it; a write stores it, answers
  {} and announces a state-change.
- An empty or missing game ID fails with score.unknown-game; bad arguments with
  rivet.invalid-request; any other RPC or key with rivet.unknown-route.
Logs go to stderr; stdout carries RVT1 frames only. It exits when stdin ends.
"""
import json
import os
import struct
import sys

# --- RVT1 framing: docs/protocol.md (RVT1 part) section 9 --------------------------------------------

MAGIC = b"RVT1"
KINDS = {1: "hello", 2: "call", 3: "result", 4: "error", 5: "cancel",
         6: "event", 7: "state-read", 8: "state-write", 9: "state-change"}
NEEDS_ID = {"call", "result", "cancel", "state-read", "state-write"}
NO_ID = {"hello", "event", "state-change"}
NEEDS_NAME = {"call", "error", "event", "state-read", "state-write", "state-change"}
NO_NAME = {"result", "cancel"}
NO_PAYLOAD = {"cancel", "state-read"}
NAME_BYTES = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:/")
MAX_NAME, MAX_PAYLOAD = 255, 524288


class RVT1Error(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


def check(kind, rid, name_len, payload_len, max_payload=MAX_PAYLOAD):
    if name_len > MAX_NAME: raise RVT1Error("rvt1.name-too-long", f"{name_len}")
    if payload_len > max_payload: raise RVT1Error("rvt1.payload-too-large", f"{payload_len}")
    if (kind in NEEDS_ID and rid == 0) or (kind in NO_ID and rid != 0):
        raise RVT1Error("rvt1.invalid-request-id", f"{kind} {rid}")
    if kind in NEEDS_NAME and name_len == 0: raise RVT1Error("rvt1.missing-name", kind)
    if kind in NO_NAME and name_len != 0: raise RVT1Error("rvt1.unexpected-name", kind)
    if kind in NO_PAYLOAD and payload_len != 0: raise RVT1Error("rvt1.unexpected-payload", kind)


def encode(kind, rid, name, payload, max_payload=MAX_PAYLOAD):
    n = name.encode("ascii")
    if any(b not in NAME_BYTES for b in n): raise RVT1Error("rvt1.invalid-name", name)
    check(kind, rid, len(n), len(payload), max_payload)
    code = {v: k for k, v in KINDS.items()}[kind]
    return MAGIC + struct.pack(">BBHQI", code, 0, len(n), rid, len(payload)) + n + payload


def read_frame(read_exactly, max_payload=MAX_PAYLOAD):
    """read_exactly(n) returns n bytes, or fewer only at end of stream.
    Returns (kind, request_id, name, payload), or None at a clean end of stream."""
    header = read_exactly(20)
    if not header: return None
    for i, b in enumerate(header[:4]):
        if b != MAGIC[i]:
            if i == 3 and 0x30 <= b <= 0x39: raise RVT1Error("rvt1.unsupported-version", chr(b))
            raise RVT1Error("rvt1.bad-magic", f"byte {i} is {b:#04x}")
    if len(header) > 4 and header[4] not in KINDS: raise RVT1Error("rvt1.unknown-kind", f"{header[4]:#04x}")
    if len(header) > 5 and header[5] != 0: raise RVT1Error("rvt1.reserved-flags", f"{header[5]:#04x}")
    if len(header) >= 8 and struct.unpack(">H", header[6:8])[0] > MAX_NAME:
        raise RVT1Error("rvt1.name-too-long", "")
    if len(header) < 20: raise RVT1Error("rvt1.truncated", "inside the header")
    code, _, name_len, rid, payload_len = struct.unpack(">BBHQI", header[4:20])
    kind = KINDS[code]
    check(kind, rid, name_len, payload_len, max_payload)  # before reading the body
    name = read_exactly(name_len)
    if len(name) < name_len: raise RVT1Error("rvt1.truncated", "inside the name")
    if any(b not in NAME_BYTES for b in name): raise RVT1Error("rvt1.invalid-name", repr(name))
    payload = read_exactly(payload_len)
    if len(payload) < payload_len: raise RVT1Error("rvt1.truncated", "inside the payload")
    if kind == "error":
        try: payload.decode("utf-8")
        except UnicodeDecodeError: raise RVT1Error("rvt1.invalid-message", "")
    return kind, rid, name.decode("ascii"), payload


# --- The scoreboard ---------------------------------------------------------------------------

class RequestError(Exception):
    """Answers one request with an error frame; the stream stays open."""
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def compact(value):
    """JSON as Rivet writes it (section 7): sorted members, no whitespace, "/" unescaped."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class Scoreboard:
    def __init__(self):
        self.games = {}
        self.home_team = "Lions"

    def score(self, game):
        return dict(self.games.get(game) or {"game-id": game, "home": 0, "away": 0, "period": "first"})

    def home_scores(self, game):
        score = self.score(game)
        score["home"] += 1
        self.games[game] = score
        return score


def game_id(payload):
    try:
        arguments = json.loads(payload)
    except ValueError:
        raise RequestError("rivet.invalid-request", "the arguments are not JSON")
    if not isinstance(arguments, dict) or not isinstance(arguments.get("game-id"), str):
        raise RequestError("rivet.invalid-request", 'the arguments need a string "game-id"')
    game = arguments["game-id"]
    if not game:
        raise RequestError("score.unknown-game", 'no game ""')
    return game


def main():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    board = Scoreboard()

    def send(kind, rid, name, payload):
        stdout.write(encode(kind, rid, name, payload))
        stdout.flush()

    def read_exactly(n):
        chunks, wanted = [], n
        while wanted > 0:
            chunk = stdin.read(wanted)
            if not chunk: break
            chunks.append(chunk)
            wanted -= len(chunk)
        return b"".join(chunks)

    print(f"scoreboard_backend.py: serving (pid {os.getpid()})", file=sys.stderr, flush=True)
    send("hello", 0, "scoreboard-backend.py", b"")
    first = True
    while True:
        try:
            frame = read_frame(read_exactly)
            if frame is None: return 0
            kind, rid, name, payload = frame
            if first != (kind == "hello"):
                raise RVT1Error("rvt1.missing-hello" if first else "rvt1.unexpected-hello", kind)
        except RVT1Error as e:
            send("error", 0, e.code, str(e).encode("utf-8"))
            return 1
        first = False
        if kind == "error" and rid == 0:
            return 0  # the gateway ended the stream
        if kind not in ("call", "state-read", "state-write"):
            continue  # cancels need nothing: every request is answered at once
        try:
            if kind == "call" and name == "current-score":
                send("result", rid, "", compact(board.score(game_id(payload))))
            elif kind == "call" and name == "refresh-score":
                score = board.home_scores(game_id(payload))
                send("event", 0, "score-changed", compact(score))
                send("result", rid, "", b"{}")
            elif kind == "state-read" and name == "home-team":
                send("result", rid, "", compact(board.home_team))
            elif kind == "state-write" and name == "home-team":
                try:
                    team = json.loads(payload)
                except ValueError:
                    team = None
                if not isinstance(team, str):
                    raise RequestError("rivet.invalid-request", "home-team is a string")
                board.home_team = team
                send("result", rid, "", b"{}")
                send("state-change", 0, "home-team", compact(team))
            else:
                raise RequestError("rivet.unknown-route", f"no handler for {kind} {name}")
        except RequestError as e:
            send("error", rid, e.code, str(e).encode("utf-8"))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
