#!/usr/bin/env python3
"""Reference implementation of the Rivet pairing commitment and confirmation code.

Writes pairing-vectors.json (the golden vectors the Swift tests and docs/protocol.md use).
It shares no code with the Swift library; re-run it only on purpose:
    python3 make-pairing-vectors.py > pairing-vectors.json
"""
import hashlib
import json
import struct


def u32be(n):
    return struct.pack(">I", n)


def commitment(nc):
    assert len(nc) == 32
    return hashlib.sha256(b"rivet-pair-commit-v1" + u32be(32) + nc).digest()


def transcript(app_id, fingerprint, nc, ns):
    app = app_id.encode("utf-8")
    assert 1 <= len(app) <= 255 and len(fingerprint) == 32 and len(nc) == 32 and len(ns) == 32
    return (b"rivet-pairing-code-v1" + u32be(len(app)) + app + u32be(32) + fingerprint
            + u32be(32) + nc + u32be(32) + ns)


def code(data):
    digest = hashlib.sha256(data).digest()
    return digest, "%06d" % (int.from_bytes(digest[:8], "big") % 1_000_000)


def h(label):
    return hashlib.sha256(label.encode()).digest()


def vector(name, app_id, fingerprint, nc, ns):
    data = transcript(app_id, fingerprint, nc, ns)
    digest, six = code(data)
    return {
        "name": name,
        "applicationID": app_id,
        "serverFingerprint": fingerprint.hex(),
        "clientNonce": nc.hex(),
        "serverNonce": ns.hex(),
        "commitment": commitment(nc).hex(),
        "transcript": data.hex(),
        "digest": digest.hex(),
        "code": six,
    }


vectors = [
    vector("counting bytes", "org.example.rivet", bytes(range(0, 32)), bytes(range(32, 64)), bytes(range(64, 96))),
    vector("hashed labels", "com.example.scoreboard", h("rivet vector 2 F"), h("rivet vector 2 Nc"), h("rivet vector 2 Ns")),
    vector("non-ASCII application ID (12 bytes, 11 characters)", "café.remote", h("rivet vector 3 F"), h("rivet vector 3 Nc"), h("rivet vector 3 Ns")),
    vector("one-byte application ID, all-zero values", "x", bytes(32), bytes(32), bytes(32)),
    vector("255-byte application ID, all-0xff values", "a" * 255, b"\xff" * 32, b"\xff" * 32, b"\xff" * 32),
]
# A vector whose code starts with zeros: the printed form must keep all six digits.
i = 0
while True:
    v = vector("code with leading zeros", "org.example.rivet", h("rivet vector 6 F"), h("rivet vector 6 Nc %d" % i), h("rivet vector 6 Ns"))
    if v["code"].startswith("00"):
        v["name"] = "code with leading zeros (Nc = SHA-256 of \"rivet vector 6 Nc %d\")" % i
        vectors.append(v)
        break
    i += 1

print(json.dumps({
    "format": "Rivet pairing golden vectors, version 1",
    "commitment": "SHA-256(\"rivet-pair-commit-v1\" || u32be(32) || Nc)",
    "code": "u64be(SHA-256(transcript)[0..<8]) mod 1000000, six digits",
    "vectors": vectors,
}, indent=2, ensure_ascii=False))
