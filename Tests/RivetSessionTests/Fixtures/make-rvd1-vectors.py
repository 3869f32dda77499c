#!/usr/bin/env python3
"""Golden RVD1 preface vectors from an encoder written independently of the Swift code.

Usage: python3 make-rvd1-vectors.py > rvd1-vectors.json
       python3 make-rvd1-vectors.py --markdown   (the vector listings of docs/protocol.md (RVD1 part))

A valid vector lists its fields, the RVD version that defines its type (a client sends the
magic RVD1, or RVD2 to pair by link) and the exact bytes (hex) of one whole message: type (u8),
length (u32 big-endian), body. The client's magic is not part of any message vector. A preface
vector is a whole client preface (magic and messages) a server's reader accepts.
An invalid vector lists bytes a reader must refuse (client-to-server input starts with the
magic, which names its version; server-to-client input names the RVD version the client's
reader assumes), the error kind, and how many bytes a reader fed one byte at a time has taken
when it refuses."""
import hashlib
import hmac
import json
import struct
import sys

MAGIC = b"RVD1"
LINK_MAGIC = b"RVD2"
TYPES = {1: "Resume", 2: "PairBegin", 3: "PairServerNonce", 4: "PairReveal", 5: "PairConfirm",
         6: "PairReject", 7: "PairAccepted", 8: "Accept", 9: "Reject", 10: "PairLinkBegin", 11: "PairLinkProof"}
REASONS = ["authenticationFailed", "versionUnsupported", "malformed", "windowClosed", "attemptInProgress",
           "rejectedByPerson", "tooManyFailures", "pairingFailed", "serverBusy", "serverError", "linkRefused"]


def seq(start, count):
    return bytes((start + i) & 0xFF for i in range(count))


def commitment(nc):
    return hashlib.sha256(b"rivet-pair-commit-v1" + struct.pack(">I", 32) + nc).digest()


def link_proof(token, app, fingerprint, nc, ns):
    """The proof of pairing by link (docs/protocol.md, "Pairing by link")."""
    key = hmac.new(token, b"rivet-pair-link-key-v1", hashlib.sha256).digest()
    data = b"rivet-pair-link-proof-v1"
    for field in (app.encode("utf-8"), fingerprint, nc, ns):
        data += struct.pack(">I", len(field)) + field
    return hmac.new(key, data, hashlib.sha256).digest()


def text(value, label):
    data = value.encode("utf-8")
    shown = value if len(value) <= 24 else value[:6] + "… (" + str(len(data)) + " bytes)"
    return [(bytes([len(data)]), f"{label} length {len(data)}"), (data, f'{label} "{shown}"')]


def message(kind, body_parts):
    """Labelled parts of one message."""
    body = b"".join(data for data, _ in body_parts)
    name = TYPES.get(kind, "undefined")
    return [(bytes([kind]), f"type {kind:#04x} {name}"), (struct.pack(">I", len(body)), f"length {len(body)}")] + body_parts


def joined(parts):
    return b"".join(data for data, _ in parts)


DEVICE_ID = seq(0x00, 16)
CREDENTIAL = seq(0x20, 32)
NC = seq(0x20, 32)
NS = seq(0x40, 32)
DISCOVERY_SECRET = seq(0x60, 32)
APP = "org.example.rivet"
FINGERPRINT = seq(0x00, 32)
TOKEN = seq(0x80, 32)
PROOF = link_proof(TOKEN, APP, FINGERPRINT, NC, NS)

valid = []


def add(name, direction, fields, parts):
    valid.append((name, direction, 2 if parts[0][0][0] in (10, 11) else 1, fields, parts))


add("resume", "clientToServer",
    {"applicationID": APP, "deviceID": DEVICE_ID.hex(), "credential": CREDENTIAL.hex()},
    message(1, text(APP, "applicationID") + [(DEVICE_ID, "deviceID"), (CREDENTIAL, "credential K")]))
add("pair-begin-new-device", "clientToServer",
    {"applicationID": APP, "deviceName": "Ana's phone", "existingDeviceID": None, "commitment": commitment(NC).hex()},
    message(2, text(APP, "applicationID") + text("Ana's phone", "deviceName")
            + [(b"\x00", "existingDeviceID absent"), (commitment(NC), "commitment")]))
add("pair-begin-re-pairing", "clientToServer",
    {"applicationID": "café.remote", "deviceName": "Zoë’s tablet", "existingDeviceID": DEVICE_ID.hex(),
     "commitment": commitment(NC).hex()},
    message(2, text("café.remote", "applicationID") + text("Zoë’s tablet", "deviceName")
            + [(b"\x01", "existingDeviceID present"), (DEVICE_ID, "existingDeviceID"), (commitment(NC), "commitment")]))
add("pair-server-nonce", "serverToClient", {"nonce": NS.hex()}, message(3, [(NS, "Ns")]))
add("pair-reveal", "clientToServer", {"nonce": NC.hex()}, message(4, [(NC, "Nc")]))
add("pair-confirm", "clientToServer", {}, message(5, []))
add("pair-reject", "clientToServer", {}, message(6, []))
add("pair-accepted", "serverToClient",
    {"deviceID": DEVICE_ID.hex(), "credential": CREDENTIAL.hex(), "discoverySecret": DISCOVERY_SECRET.hex()},
    message(7, [(DEVICE_ID, "deviceID"), (CREDENTIAL, "credential K"), (DISCOVERY_SECRET, "discovery secret S")]))
add("accept", "serverToClient", {}, message(8, []))
add("pair-link-begin-new-device", "clientToServer",
    {"applicationID": APP, "deviceName": "Ana's phone", "existingDeviceID": None, "clientNonce": NC.hex()},
    message(10, text(APP, "applicationID") + text("Ana's phone", "deviceName")
            + [(b"\x00", "existingDeviceID absent"), (NC, "Nc")]))
add("pair-link-begin-re-pairing", "clientToServer",
    {"applicationID": "café.remote", "deviceName": "Zoë’s tablet", "existingDeviceID": DEVICE_ID.hex(),
     "clientNonce": NC.hex()},
    message(10, text("café.remote", "applicationID") + text("Zoë’s tablet", "deviceName")
            + [(b"\x01", "existingDeviceID present"), (DEVICE_ID, "existingDeviceID"), (NC, "Nc")]))
add("pair-link-proof", "clientToServer", {"proof": PROOF.hex()},
    message(11, [(PROOF, "proof")]))
for code, reason in enumerate(REASONS, start=1):
    add(f"reject-{reason}", "serverToClient", {"reason": code}, message(9, [(bytes([code]), f"reason {reason}")]))
add("resume-longest", "clientToServer",
    {"applicationID": "a" * 255, "deviceID": "ff" * 16, "credential": "ff" * 32},
    message(1, text("a" * 255, "applicationID") + [(b"\xff" * 16, "deviceID"), (b"\xff" * 32, "credential K")]))
add("pair-begin-longest", "clientToServer",
    {"applicationID": "a" * 255, "deviceName": "n" * 128, "existingDeviceID": "ff" * 16, "commitment": "ff" * 32},
    message(2, text("a" * 255, "applicationID") + text("n" * 128, "deviceName")
            + [(b"\x01", "existingDeviceID present"), (b"\xff" * 16, "existingDeviceID"), (b"\xff" * 32, "commitment")]))
add("pair-link-begin-longest", "clientToServer",
    {"applicationID": "a" * 255, "deviceName": "n" * 128, "existingDeviceID": "ff" * 16, "clientNonce": "ff" * 32},
    message(10, text("a" * 255, "applicationID") + text("n" * 128, "deviceName")
            + [(b"\x01", "existingDeviceID present"), (b"\xff" * 16, "existingDeviceID"), (b"\xff" * 32, "Nc")]))

VALID = {name: parts for name, _, _, _, parts in valid}
prefaces = []


def preface(name, magic, names):
    prefaces.append((name, names, [(magic, "magic " + magic.decode())] + [p for n in names for p in VALID[n]]))


preface("link-pairing", LINK_MAGIC, ["pair-link-begin-new-device", "pair-link-proof"])
preface("resume-under-rvd2", LINK_MAGIC, ["resume"])
preface("resume-under-rvd1", MAGIC, ["resume"])

invalid = []


# A client reads the server's messages with the table of the newest version it speaks, whichever
# magic it sent: every server-to-client vector assumes a client that speaks RVD2. (A client that
# speaks only RVD1 refuses the types 0x0a and 0x0b as unknownMessageType instead of
# wrongDirection; it closes without a message either way.) Client-to-server input names its
# version with its magic.
CLIENT_VERSION = 2


def refuse(name, direction, parts, error, consumed):
    version = CLIENT_VERSION if direction == "serverToClient" else None
    invalid.append((name, direction, version, parts, error, consumed))


M = [(MAGIC, "magic")]
M2 = [(LINK_MAGIC, "magic RVD2")]
RESUME_BODY = text(APP, "applicationID") + [(DEVICE_ID, "deviceID"), (CREDENTIAL, "credential K")]
refuse("bad-magic", "clientToServer", [(b"GET / HTTP/1.1\r\n", "not RVD1")], "badMagic", 4)
refuse("version-3", "clientToServer", [(b"RVD3", "magic of version 3")] + message(1, RESUME_BODY),
       "unsupportedVersion", 4)
refuse("version-0", "clientToServer", [(b"RVD0", "magic of version 0")] + message(1, RESUME_BODY),
       "unsupportedVersion", 4)
refuse("unknown-type", "clientToServer", M2 + message(0x0C, []), "unknownMessageType", 9)
refuse("link-begin-under-rvd1", "clientToServer", M + VALID["pair-link-begin-new-device"], "unknownMessageType", 9)
refuse("link-proof-under-rvd1", "clientToServer", M + VALID["pair-link-proof"], "unknownMessageType", 9)
refuse("type-zero", "clientToServer", M + message(0x00, []), "unknownMessageType", 9)
refuse("server-message-from-client", "clientToServer", M + message(8, []), "wrongDirection", 9)
refuse("client-message-from-server", "serverToClient", message(5, []), "wrongDirection", 5)
refuse("resume-one-byte-too-long", "clientToServer",
       M + [(b"\x01", "type 0x01 Resume"), (struct.pack(">I", 305), "length 305 (limit 304)")], "oversized", 9)
refuse("pair-begin-one-byte-too-long", "clientToServer",
       M + [(b"\x02", "type 0x02 PairBegin"), (struct.pack(">I", 435), "length 435 (limit 434)")], "oversized", 9)
refuse("huge-length", "clientToServer",
       M + [(b"\x01", "type 0x01 Resume"), (struct.pack(">I", 0xFFFFFFFF), "length 4294967295")], "oversized", 9)
refuse("link-proof-from-server", "serverToClient", VALID["pair-link-proof"], "wrongDirection", 5)
refuse("link-begin-one-byte-too-long", "clientToServer",
       M2 + [(b"\x0a", "type 0x0a PairLinkBegin"), (struct.pack(">I", 435), "length 435 (limit 434)")], "oversized", 9)
refuse("link-proof-31-bytes", "clientToServer",
       M2 + [(b"\x0b", "type 0x0b PairLinkProof"), (struct.pack(">I", 31), "length 31 (needs 32)"), (PROOF[:31], "31 bytes")],
       "malformed", 9)
refuse("link-proof-33-bytes", "clientToServer",
       M2 + [(b"\x0b", "type 0x0b PairLinkProof"), (struct.pack(">I", 33), "length 33 (limit 32)"),
             (PROOF + b"\x00", "33 bytes")], "oversized", 9)
refuse("nonce-too-short", "serverToClient",
       [(b"\x03", "type 0x03 PairServerNonce"), (struct.pack(">I", 31), "length 31 (needs 32)"), (NS[:31], "31 bytes")],
       "malformed", 5)
refuse("nonce-too-long", "serverToClient",
       [(b"\x03", "type 0x03 PairServerNonce"), (struct.pack(">I", 33), "length 33 (limit 32)"), (NS + b"\x00", "33 bytes")],
       "oversized", 5)
refuse("pair-accepted-without-discovery-secret", "serverToClient",
       [(b"\x07", "type 0x07 PairAccepted"), (struct.pack(">I", 48), "length 48 (needs 80)"), (DEVICE_ID, "deviceID"),
        (CREDENTIAL, "credential K")], "malformed", 5)
refuse("pair-accepted-one-byte-too-long", "serverToClient",
       [(b"\x07", "type 0x07 PairAccepted"), (struct.pack(">I", 81), "length 81 (limit 80)"), (DEVICE_ID, "deviceID"),
        (CREDENTIAL, "credential K"), (DISCOVERY_SECRET, "discovery secret S"), (b"\x00", "trailing byte")],
       "oversized", 5)
refuse("confirm-with-body", "clientToServer",
       M + [(b"\x05", "type 0x05 PairConfirm"), (struct.pack(">I", 1), "length 1 (limit 0)"), (b"\x00", "body")],
       "oversized", 9)
refuse("empty-application-id", "clientToServer",
       M + message(1, [(b"\x00", "applicationID length 0"), (b"x", "a stray byte"), (DEVICE_ID, "deviceID"),
                       (CREDENTIAL, "credential K")]), "malformed", 59)
refuse("application-id-not-utf8", "clientToServer",
       M + message(1, [(b"\x02", "applicationID length 2"), (b"\xc3\x28", "invalid UTF-8"), (DEVICE_ID, "deviceID"),
                       (CREDENTIAL, "credential K")]), "malformed", 60)
refuse("application-id-control-character", "clientToServer",
       M + message(1, [(b"\x02", "applicationID length 2"), (b"a\x1b", '"a" ESC'), (DEVICE_ID, "deviceID"),
                       (CREDENTIAL, "credential K")]), "malformed", 60)
refuse("resume-trailing-byte", "clientToServer",
       M + message(1, RESUME_BODY + [(b"\x00", "trailing byte")]), "malformed", 76)
refuse("device-name-129-bytes", "clientToServer",
       M + message(2, text(APP, "applicationID") + [(bytes([129]), "deviceName length 129 (limit 128)"),
                                                   (b"n" * 129, "129 bytes"), (b"\x00", "existingDeviceID absent"),
                                                   (commitment(NC), "commitment")]), "malformed", 190)
refuse("existing-device-flag-2", "clientToServer",
       M + message(2, text(APP, "applicationID") + text("phone", "deviceName")
                   + [(b"\x02", "existingDeviceID flag 2"), (DEVICE_ID, "deviceID"), (commitment(NC), "commitment")]),
       "malformed", 82)
refuse("link-begin-without-nonce", "clientToServer",
       M2 + message(10, text(APP, "applicationID") + text("phone", "deviceName")
                    + [(b"\x00", "existingDeviceID absent"), (b"\x00" * 16, "16 bytes where Nc needs 32")]), "malformed", 50)
refuse("link-begin-trailing-byte", "clientToServer",
       M2 + message(10, text(APP, "applicationID") + text("phone", "deviceName")
                    + [(b"\x00", "existingDeviceID absent"), (NC, "Nc"), (b"\x00", "trailing byte")]), "malformed", 67)


def listing(name, header, parts):
    lines = [f"{name}  ({header})"]
    for data, label in parts:
        chunks = [data.hex()[i:i + 64] for i in range(0, len(data.hex()), 64)] or [""]
        for index, chunk in enumerate(chunks):
            lines.append(f"  {chunk:<64}  {label if index == 0 else ''}".rstrip())
    return "\n".join(lines)


if "--markdown" in sys.argv:
    print("```text")
    print("\n\n".join(listing(n, f"{d}, {len(joined(p))} bytes" + (", RVD2" if v == 2 else ""), p)
                      for n, d, v, _, p in valid))
    print("```")
    print()
    print("```text")
    print("\n\n".join(listing(n, f"clientToServer preface, {len(joined(p))} bytes", p) for n, _, p in prefaces))
    print("```")
    print()
    print("```text")
    print("\n\n".join(listing(n, f"{d}, " + (f"RVD{v}, " if v else "") + f"refused as {e} after {c} bytes", p)
                      for n, d, v, p, e, c in invalid))
    print("```")
else:
    print(json.dumps({
        "magic": MAGIC.hex(),
        "linkMagic": LINK_MAGIC.hex(),
        "valid": [{"name": n, "direction": d, "version": v, "fields": f, "hex": joined(p).hex()}
                  for n, d, v, f, p in valid],
        "prefaces": [{"name": n, "messages": m, "hex": joined(p).hex()} for n, m, p in prefaces],
        "invalid": [{"name": n, "direction": d, **({"version": v} if v else {}), "hex": joined(p).hex(), "error": e,
                     "consumedBeforeError": c}
                    for n, d, v, p, e, c in invalid],
    }, indent=2, ensure_ascii=False))
