#!/usr/bin/env python3
"""Reference reader for the Rivet discovery advertisement (docs/protocol.md, "Discovery").

Written from the specification alone, independently of the Swift code, and checked against the
golden vectors in discovery-vectors.json by the Swift test suite:

    python3 reference.py discovery-vectors.json     # exit 0 when every vector agrees

It implements the discovery hint (HMAC-SHA256 over a label and the hour) and the canonical TXT
check with its ordered rejection reasons.
"""

import hashlib
import hmac
import json
import struct
import sys

HINT_LABEL = b"rivet-discovery-hint-v1"
KEYS = ["v", "h", "proto"]
BOUNDS = {"v": 3, "h": 16, "proto": 8}
HEX = set(b"0123456789abcdef")


def hint(secret: bytes, epoch: int) -> str:
    """The 16 lowercase hex digits of the first 8 bytes of HMAC-SHA256(S, label || u64be(epoch))."""
    assert len(secret) == 32
    mac = hmac.new(secret, HINT_LABEL + struct.pack(">Q", epoch), hashlib.sha256).digest()
    return mac[:8].hex()


def epoch_of(unix_seconds: int) -> int:
    return max(0, unix_seconds // 3600)


def recognizes(secret: bytes, h: str, unix_seconds: int) -> bool:
    now = epoch_of(unix_seconds)
    return any(
        hmac.compare_digest(hint(secret, e), h) for e in (now - 1, now, now + 1) if 0 <= e < 2**64
    )


def split_rdata(rdata: bytes) -> list:
    """TXT RDATA -> entries (each a length byte and that many bytes)."""
    entries, at = [], 0
    while at < len(rdata):
        n = rdata[at]
        if at + 1 + n > len(rdata):
            raise ValueError("truncated TXT RDATA")
        entries.append(rdata[at + 1 : at + 1 + n])
        at += 1 + n
    return entries


def check(entries: list):
    """Returns ("accept", hint) or ("reject", reason), by the specification's order of checks."""
    if entries == [] or entries == [b""]:
        return ("reject", "missing-key")
    seen, order, values = {}, [], {}
    for entry in entries:  # pass 1: each entry on its own
        if any(b >= 0x80 for b in entry):
            return ("reject", "non-ascii")
        if b"=" not in entry:
            return ("reject", "key-without-value")
        key, value = entry.split(b"=", 1)
        if any(0x41 <= b <= 0x5A for b in key):
            return ("reject", "uppercase-key")
        key = key.decode("ascii")
        if key not in KEYS:
            return ("reject", "unknown-key")
        if key in seen:
            return ("reject", "duplicate-key")
        seen[key] = True
        order.append(key)
        values[key] = value
    if any(k not in seen for k in KEYS):  # pass 2
        return ("reject", "missing-key")
    if order != KEYS:  # pass 3
        return ("reject", "wrong-order")
    for key in KEYS:  # pass 4
        value = values[key]
        if len(value) > BOUNDS[key]:
            return ("reject", "value-too-long")
        if key == "v" and value != b"1":
            return ("reject", "bad-value")
        if key == "h" and (len(value) != 16 or any(b not in HEX for b in value)):
            return ("reject", "bad-value")
        if key == "proto" and value != b"rvd1":
            return ("reject", "bad-value")
    return ("accept", values["h"].decode("ascii"))


def main(path: str) -> int:
    with open(path) as f:
        vectors = json.load(f)
    failures = 0
    for v in vectors["hints"]:
        got = hint(bytes.fromhex(v["secret"]), v["epoch"])
        if got != v["hint"]:
            print(f"hint mismatch for epoch {v['epoch']}: {got} != {v['hint']}")
            failures += 1
    for v in vectors["recognition"]:
        got = recognizes(bytes.fromhex(v["secret"]), v["hint"], v["unix_seconds"])
        if got != v["recognized"]:
            print(f"recognition mismatch: {v}")
            failures += 1
    for v in vectors["txt"]:
        got = check(split_rdata(bytes.fromhex(v["rdata"])))
        want = ("accept", v["hint"]) if v["result"] == "accept" else ("reject", v["reason"])
        if got != want:
            print(f"TXT mismatch for {v['name']}: {got} != {want}")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
