#!/usr/bin/env python3
"""Golden vectors of pairing by link (the rivet:// link and the proof), from a parser, a writer
and a proof written independently of the Swift code, from docs/protocol.md ("Pairing by link")
alone, with the Python standard library only.

Usage: python3 make-link-vectors.py > link-vectors.json
       python3 make-link-vectors.py --check link-vectors.json   (exit 1 unless the file is what
                                                                 this script writes)
       python3 make-link-vectors.py --markdown   (the vector listings of docs/protocol.md)

Every vector is checked here too: each valid link parses to its fields and its fields write the
canonical text; each invalid link is refused with its error kind."""
import base64
import hashlib
import hmac
import json
import socket
import struct
import sys
import unicodedata

MAXIMUM_BYTES = 2048
MAXIMUM_ADDR = 7          # addr parameters: the host plus at most 7 more addresses
UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
HEX = set(b"0123456789abcdefABCDEF")
DNS = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.")
B64URL = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


class LinkError(Exception):
    def __init__(self, kind):
        super().__init__(kind)
        self.kind = kind


# ---------------------------------------------------------------- the link


def valid_host(host):
    if ":" in host:
        try:
            socket.inet_pton(socket.AF_INET6, host)
        except (OSError, ValueError):
            return False
        return len(host.encode()) <= 45
    data = host.encode()
    return 1 <= len(data) <= 253 and all(b in DNS for b in data)


def host_port(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def valid_application_id(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return 1 <= len(data) <= 255 and not any(hidden(c) for c in text)


def hidden(c):
    """The name rule of docs/protocol.md: no C0, DEL or C1 control, no format character (Cf: BiDi
    controls, zero-width characters, U+FEFF), no line or paragraph separator (Zl, Zp) and no
    unassigned code point (Cn)."""
    return ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or unicodedata.category(c) in ("Cf", "Zl", "Zp", "Cn")


def percent_decode(value):
    out = bytearray()
    data = value.encode()
    i = 0
    while i < len(data):
        if data[i] == ord("%"):
            if i + 2 >= len(data) or data[i + 1] not in HEX or data[i + 2] not in HEX:
                raise LinkError("invalidApplicationID")
            out.append(int(data[i + 1:i + 3], 16))
            i += 3
        elif data[i] in UNRESERVED:
            out.append(data[i])
            i += 1
        else:
            raise LinkError("invalidApplicationID")
    return bytes(out)


def ipv4_bytes(text):
    """The 4 bytes of a dotted-quad IPv4 address written canonically (four decimal numbers
    0-255, no leading zero, no sign), else None."""
    parts = text.split(".")
    if len(parts) != 4:
        return None
    out = bytearray()
    for part in parts:
        if not (1 <= len(part) <= 3 and all(c in "0123456789" for c in part)) or (len(part) > 1 and part[0] == "0"):
            return None
        if int(part) > 255:
            return None
        out.append(int(part))
    return bytes(out)


def ipv6_bytes(text):
    if ":" not in text or len(text.encode()) > 45:
        return None
    try:
        return socket.inet_pton(socket.AF_INET6, text)
    except (OSError, ValueError):
        return None


def parse_address(value):
    """An addr value: a dotted-quad IPv4 address, or %5B IPv6 %5D (either case); the address
    text and its bytes, else LinkError(invalidAddress)."""
    if value[:3].upper() == "%5B" and value[-3:].upper() == "%5D" and len(value) >= 6:
        inner = value[3:-3]
        raw = ipv6_bytes(inner)
    else:
        inner = value
        raw = ipv4_bytes(inner)
    if raw is None:
        raise LinkError("invalidAddress")
    return inner, raw


def address_bytes(host):
    return ipv6_bytes(host) if ":" in host else ipv4_bytes(host)


def percent_encode(text):
    return "".join(chr(b) if b in UNRESERVED else "%%%02X" % b for b in text.encode("utf-8"))


def base64url_decode(text):
    data = text.encode()
    if len(data) % 4 == 1 or any(b not in B64URL for b in data):
        raise LinkError("invalidToken")
    decoded = base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))
    if base64.urlsafe_b64encode(decoded).rstrip(b"=") != data:   # unused low bits not zero
        raise LinkError("invalidToken")
    return decoded


def parse(text):
    """The fields of a link, or LinkError(kind), checking in the document's order."""
    data = text.encode("utf-8")
    if len(data) > MAXIMUM_BYTES:
        raise LinkError("tooLong")
    if data[:8].lower() != b"rivet://":
        raise LinkError("notALink")
    if any(b < 0x21 or b > 0x7E for b in data):
        raise LinkError("malformed")
    rest = text[8:]
    if "#" in rest or "?" not in rest:
        raise LinkError("malformed")
    before, query = rest.split("?", 1)
    if "/" not in before:
        raise LinkError("malformed")
    authority, path = before[:before.index("/")], before[before.index("/"):]
    if path != "/pair":
        raise LinkError("malformed")
    if "@" in authority:
        raise LinkError("malformed")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0 or authority[close + 1:close + 2] != ":":
            raise LinkError("invalidHost")
        host = authority[1:close]
        if ":" not in host:
            raise LinkError("invalidHost")
        port_text = authority[close + 2:]
    else:
        if ":" not in authority:
            raise LinkError("invalidPort")
        host, port_text = authority.rsplit(":", 1)
        if ":" in host:
            raise LinkError("invalidHost")
    if not (1 <= len(port_text) <= 5 and port_text.isascii() and port_text.isdigit()
            and port_text[0] != "0" and int(port_text) <= 65535):
        raise LinkError("invalidPort")
    fields = {}
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if name not in ("app", "fp", "t"):
            continue
        if not equals or name in fields:
            raise LinkError("malformed")
        fields[name] = value
    if any(name not in fields for name in ("app", "fp", "t")):
        raise LinkError("malformed")
    app = percent_decode(fields["app"])
    if not valid_application_id(app):
        raise LinkError("invalidApplicationID")
    if len(fields["fp"]) != 64 or any(b not in HEX for b in fields["fp"].encode()):
        raise LinkError("invalidFingerprint")
    token = base64url_decode(fields["t"])
    if len(token) != 32:
        raise LinkError("invalidToken")
    if not valid_host(host) or len(host_port(host, int(port_text)).encode()) > 255:
        raise LinkError("invalidHost")
    seen = [address_bytes(host)]
    addresses = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if name != "addr":
            continue
        if not equals or len(addresses) == MAXIMUM_ADDR:
            raise LinkError("invalidAddress")
        text, raw = parse_address(value)
        if raw in seen:
            raise LinkError("invalidAddress")
        seen.append(raw)
        addresses.append(text)
    return {"host": host, "port": int(port_text), "applicationID": app.decode("utf-8"),
            "fingerprint": fields["fp"].lower(), "token": base64.urlsafe_b64encode(token).rstrip(b"=").decode(),
            "addresses": addresses}


def write(fields):
    """The canonical text of a link."""
    return (f"rivet://{host_port(fields['host'], fields['port'])}/pair?app={percent_encode(fields['applicationID'])}"
            f"&fp={fields['fingerprint']}&t={fields['token']}"
            + "".join(f"&addr=%5B{a}%5D" if ":" in a else f"&addr={a}" for a in fields["addresses"]))


# ---------------------------------------------------------------- the proof


def transcript(app, fingerprint, nc, ns):
    data = b"rivet-pair-link-proof-v1"
    for field in (app.encode("utf-8"), fingerprint, nc, ns):
        data += struct.pack(">I", len(field)) + field
    return data


def derived_key(token):
    return hmac.new(token, b"rivet-pair-link-key-v1", hashlib.sha256).digest()


def proof(token, app, fingerprint, nc, ns):
    return hmac.new(derived_key(token), transcript(app, fingerprint, nc, ns), hashlib.sha256).digest()


# ---------------------------------------------------------------- the vectors


def seq(start, count):
    return bytes((start + i) & 0xFF for i in range(count))


def h(label):
    return hashlib.sha256(label.encode()).digest()


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


F = h("rivet link vectors: fingerprint").hex()
# A token whose text uses both digits of the URL alphabet (- and _).
TOKEN = next(t for t in (h(f"rivet link vectors: token {i}") for i in range(1000)) if "-" in b64(t) and "_" in b64(t))
T = b64(TOKEN)
APP = "org.example.rivet"


def fields(host, port, app=APP, fingerprint=F, token=T, addresses=()):
    return {"host": host, "port": port, "applicationID": app, "fingerprint": fingerprint, "token": token,
            "addresses": list(addresses)}


def link(host_and_port, app="org.example.rivet", fp=F, t=T, extra=""):
    return f"rivet://{host_and_port}/pair?app={app}&fp={fp}&t={t}{extra}"


valid = []


def accept(name, text, expected):
    valid.append({"name": name, "text": text, "fields": expected, "canonical": write(expected)})


base = link("192.168.1.20:4433")
accept("ipv4", base, fields("192.168.1.20", 4433))
accept("ipv6", link("[2001:db8::7]:4433"), fields("2001:db8::7", 4433))
accept("ipv6-loopback", link("[::1]:4433"), fields("::1", 4433))
accept("dns-name", link("kitchen-desktop.local:4433"), fields("kitchen-desktop.local", 4433))
accept("dns-name-kept-as-written", link("Kitchen-Desktop.LOCAL:4433"), fields("Kitchen-Desktop.LOCAL", 4433))
accept("non-ascii-application-id", link("192.168.1.20:4433", app="caf%C3%A9.remote"),
       fields("192.168.1.20", 4433, app="café.remote"))
accept("application-id-space-and-apostrophe", link("192.168.1.20:4433", app="Zo%C3%AB%E2%80%99s%20app"),
       fields("192.168.1.20", 4433, app="Zoë’s app"))
accept("application-id-unreserved", link("192.168.1.20:4433", app="a-b.c_d~e"),
       fields("192.168.1.20", 4433, app="a-b.c_d~e"))
app255 = "é" * 127 + "a"
accept("application-id-255-bytes", link("192.168.1.20:4433", app="%C3%A9" * 127 + "a"),
       fields("192.168.1.20", 4433, app=app255))
accept("port-1", link("192.168.1.20:1"), fields("192.168.1.20", 1))
accept("port-65535", link("192.168.1.20:65535"), fields("192.168.1.20", 65535))
host253 = ("a" * 62 + ".") * 3 + "a" * 64
accept("host-port-255-bytes", link(host253 + ":4"), fields(host253, 4))
accept("uppercase-scheme-lowercase-escapes-uppercase-fp",
       "RIVET://192.168.1.20:4433/pair?app=caf%c3%a9.remote&fp=" + F.upper() + "&t=" + T,
       fields("192.168.1.20", 4433, app="café.remote"))
accept("mixed-case-scheme", "Rivet" + base[5:], fields("192.168.1.20", 4433))
accept("unknown-parameters-ignored", link("192.168.1.20:4433", extra="&v=2&flag&&x=%ZZ"), fields("192.168.1.20", 4433))
accept("parameters-in-another-order", f"rivet://192.168.1.20:4433/pair?t={T}&fp={F}&app=org.example.rivet",
       fields("192.168.1.20", 4433))
accept("one-more-address", link("192.0.2.1:4433", extra="&addr=%5Bfd00:db8:1::1%5D"),
       fields("192.0.2.1", 4433, addresses=["fd00:db8:1::1"]))
four = ["192.0.2.1", "198.51.100.7", "fd00:db8:1::1", "fd12:3456:789a:1::2"]
accept("four-addresses", link("192.0.2.1:4433", app="net.example.scoreboard",
                              extra="&addr=198.51.100.7&addr=%5Bfd00:db8:1::1%5D&addr=%5Bfd12:3456:789a:1::2%5D"),
       fields("192.0.2.1", 4433, app="net.example.scoreboard", addresses=four[1:]))
eight = ["192.0.2.%d" % i for i in range(1, 9)]
accept("eight-addresses", link("192.0.2.1:4433", extra="".join("&addr=" + a for a in eight[1:])),
       fields("192.0.2.1", 4433, addresses=eight[1:]))
accept("address-lowercase-escapes-kept-in-order",
       link("[fd00:db8:1::1]:4433", extra="&addr=%5bfd00:db8:1::2%5d&v=2&addr=192.0.2.1"),
       fields("fd00:db8:1::1", 4433, addresses=["fd00:db8:1::2", "192.0.2.1"]))
accept("addresses-before-the-other-parameters", f"rivet://192.0.2.1:4433/pair?addr=192.0.2.2&app=org.example.rivet&fp={F}&t={T}",
       fields("192.0.2.1", 4433, addresses=["192.0.2.2"]))
accept("address-beside-a-dns-name", link("kitchen-desktop.local:4433", extra="&addr=192.0.2.1"),
       fields("kitchen-desktop.local", 4433, addresses=["192.0.2.1"]))
pad_prefix = base + "&pad="
accept("exactly-2048-bytes", pad_prefix + "x" * (MAXIMUM_BYTES - len(pad_prefix)), fields("192.168.1.20", 4433))

invalid = []


def refuse(name, text, kind):
    invalid.append({"name": name, "text": text, "error": kind})


noncanonical = T[:-1] + chr(B64URL[B64URL.index(T[-1].encode()) | 1])
refuse("2049-bytes", pad_prefix + "x" * (MAXIMUM_BYTES + 1 - len(pad_prefix)), "tooLong")
refuse("https-scheme", "https" + base[5:], "notALink")
refuse("no-scheme", base[8:], "notALink")
refuse("scheme-without-slashes", "rivet:" + base[8:], "notALink")
refuse("empty", "", "notALink")
refuse("raw-space", link("192.168.1.20:4433", extra="&x=a b"), "malformed")
refuse("non-ascii-character", link("192.168.1.20:4433", extra="&x=é"), "malformed")
refuse("fragment-after-combining-mark", link("192.168.1.20:4433", extra="&x=#\u0301"), "malformed")
refuse("separator-before-combining-mark", link("192.168.1.20:4433", extra="&\u0301x=1"), "malformed")
refuse("trailing-newline", base + "\n", "malformed")
refuse("fragment", base + "#top", "malformed")
refuse("no-query", "rivet://192.168.1.20:4433/pair", "malformed")
refuse("no-path", f"rivet://192.168.1.20:4433?app=org.example.rivet&fp={F}&t={T}", "malformed")
refuse("path-not-pair", link("192.168.1.20:4433").replace("/pair?", "/pairing?"), "malformed")
refuse("path-uppercase", link("192.168.1.20:4433").replace("/pair?", "/PAIR?"), "malformed")
refuse("path-trailing-slash", link("192.168.1.20:4433").replace("/pair?", "/pair/?"), "malformed")
refuse("user-information", link("ana@192.168.1.20:4433"), "malformed")
refuse("missing-app", f"rivet://192.168.1.20:4433/pair?fp={F}&t={T}", "malformed")
refuse("missing-fp", f"rivet://192.168.1.20:4433/pair?app=org.example.rivet&t={T}", "malformed")
refuse("missing-t", f"rivet://192.168.1.20:4433/pair?app=org.example.rivet&fp={F}", "malformed")
refuse("parameter-name-uppercase", f"rivet://192.168.1.20:4433/pair?APP=org.example.rivet&fp={F}&t={T}", "malformed")
refuse("duplicate-t", base + "&t=" + T, "malformed")
refuse("duplicate-app", base + "&app=org.example.rivet", "malformed")
refuse("t-without-value", f"rivet://192.168.1.20:4433/pair?app=org.example.rivet&fp={F}&t", "malformed")
refuse("port-0", link("192.168.1.20:0"), "invalidPort")
refuse("port-65536", link("192.168.1.20:65536"), "invalidPort")
refuse("port-leading-zero", link("192.168.1.20:04433"), "invalidPort")
refuse("port-missing", link("192.168.1.20"), "invalidPort")
refuse("port-empty", link("192.168.1.20:"), "invalidPort")
refuse("port-sign", link("192.168.1.20:+4433"), "invalidPort")
refuse("port-six-digits", link("192.168.1.20:100000"), "invalidPort")
refuse("ipv6-port-empty", link("[::1]:"), "invalidPort")
refuse("ipv6-without-brackets", link("2001:db8::7:4433"), "invalidHost")
refuse("ipv6-without-port", link("[2001:db8::7]"), "invalidHost")
refuse("ipv6-invalid", link("[2001:db8::g]:4433"), "invalidHost")
refuse("ipv6-zone", link("[fe80::1%25eth0]:4433"), "invalidHost")
refuse("ipv4-in-brackets", link("[192.168.1.20]:4433"), "invalidHost")
refuse("host-underscore", link("kitchen_desktop.local:4433"), "invalidHost")
refuse("host-empty", link(":4433"), "invalidHost")
refuse("host-254-characters", link("a" * 254 + ":4433"), "invalidHost")
refuse("host-port-256-bytes", link(host253 + ":44"), "invalidHost")
refuse("app-raw-space", link("192.168.1.20:4433", app="org example"), "malformed")
refuse("app-plus", link("192.168.1.20:4433", app="org+example"), "invalidApplicationID")
refuse("app-broken-escape", link("192.168.1.20:4433", app="org%2"), "invalidApplicationID")
refuse("app-escape-not-hex", link("192.168.1.20:4433", app="org%G0"), "invalidApplicationID")
refuse("app-invalid-utf8", link("192.168.1.20:4433", app="caf%C3%28"), "invalidApplicationID")
refuse("app-256-bytes", link("192.168.1.20:4433", app="%C3%A9" * 128), "invalidApplicationID")
refuse("app-control-character", link("192.168.1.20:4433", app="a%1B"), "invalidApplicationID")
refuse("app-c1-control-character", link("192.168.1.20:4433", app="a%C2%85"), "invalidApplicationID")
refuse("app-delete", link("192.168.1.20:4433", app="a%7F"), "invalidApplicationID")
refuse("app-right-to-left-override", link("192.168.1.20:4433", app="Kitchen%E2%80%AEgnp.exe"), "invalidApplicationID")
refuse("app-left-to-right-isolate", link("192.168.1.20:4433", app="a%E2%81%A6b"), "invalidApplicationID")
refuse("app-zero-width-space", link("192.168.1.20:4433", app="org.example%E2%80%8B.rivet"), "invalidApplicationID")
refuse("app-byte-order-mark", link("192.168.1.20:4433", app="%EF%BB%BForg.example.rivet"), "invalidApplicationID")
refuse("app-line-separator", link("192.168.1.20:4433", app="a%E2%80%A8b"), "invalidApplicationID")
refuse("app-paragraph-separator", link("192.168.1.20:4433", app="a%E2%80%A9b"), "invalidApplicationID")
refuse("app-unassigned", link("192.168.1.20:4433", app="a%CD%B8b"), "invalidApplicationID")
refuse("app-empty", link("192.168.1.20:4433", app=""), "invalidApplicationID")
refuse("fp-63-digits", link("192.168.1.20:4433", fp=F[:63]), "invalidFingerprint")
refuse("fp-65-digits", link("192.168.1.20:4433", fp=F + "0"), "invalidFingerprint")
refuse("fp-not-hex", link("192.168.1.20:4433", fp="g" + F[1:]), "invalidFingerprint")
refuse("token-42-characters", link("192.168.1.20:4433", t=T[:42]), "invalidToken")
refuse("token-44-characters", link("192.168.1.20:4433", t=T + "A"), "invalidToken")
refuse("token-padded", link("192.168.1.20:4433", t=T + "="), "invalidToken")
refuse("token-plus-and-slash", link("192.168.1.20:4433", t=T.replace("-", "+").replace("_", "/")), "invalidToken")
refuse("token-unused-bits-not-zero", link("192.168.1.20:4433", t=noncanonical), "invalidToken")
nine = ["192.0.2.%d" % i for i in range(1, 10)]
refuse("nine-addresses", link("192.0.2.1:4433", extra="".join("&addr=" + a for a in nine[1:])), "invalidAddress")
refuse("addr-without-value", link("192.0.2.1:4433", extra="&addr"), "invalidAddress")
refuse("addr-empty", link("192.0.2.1:4433", extra="&addr="), "invalidAddress")
refuse("addr-ipv6-without-brackets", link("192.0.2.1:4433", extra="&addr=fd00:db8:1::1"), "invalidAddress")
refuse("addr-ipv6-raw-brackets", link("192.0.2.1:4433", extra="&addr=[fd00:db8:1::1]"), "invalidAddress")
refuse("addr-ipv6-invalid", link("192.0.2.1:4433", extra="&addr=%5Bfd00:db8:1::g%5D"), "invalidAddress")
refuse("addr-ipv6-zone", link("192.0.2.1:4433", extra="&addr=%5Bfe80::1%25eth0%5D"), "invalidAddress")
refuse("addr-ipv4-in-brackets", link("192.0.2.1:4433", extra="&addr=%5B192.0.2.2%5D"), "invalidAddress")
refuse("addr-ipv4-leading-zero", link("192.0.2.1:4433", extra="&addr=192.0.2.02"), "invalidAddress")
refuse("addr-ipv4-256", link("192.0.2.1:4433", extra="&addr=192.0.2.256"), "invalidAddress")
refuse("addr-ipv4-three-parts", link("192.0.2.1:4433", extra="&addr=192.0.2"), "invalidAddress")
refuse("addr-with-port", link("192.0.2.1:4433", extra="&addr=192.0.2.2:4433"), "invalidAddress")
refuse("addr-dns-name", link("192.0.2.1:4433", extra="&addr=kitchen-desktop.local"), "invalidAddress")
refuse("addr-same-as-host", link("192.0.2.1:4433", extra="&addr=192.0.2.1"), "invalidAddress")
refuse("addr-same-ipv6-written-otherwise", link("[fd00:db8:1::1]:4433", extra="&addr=%5Bfd00:db8:1:0::1%5D"), "invalidAddress")
refuse("addr-twice", link("192.0.2.1:4433", extra="&addr=192.0.2.2&addr=192.0.2.2"), "invalidAddress")
refuse("addr-after-bad-host", link("kitchen_desktop.local:4433", extra="&addr=192.0.2.2"), "invalidHost")

proofs = []


def prove(name, token, app, fingerprint, nc, ns):
    proofs.append({"name": name, "token": b64(token), "applicationID": app, "fingerprint": fingerprint.hex(),
                   "clientNonce": nc.hex(), "serverNonce": ns.hex(), "key": derived_key(token).hex(),
                   "transcript": transcript(app, fingerprint, nc, ns).hex(),
                   "proof": proof(token, app, fingerprint, nc, ns).hex()})


prove("counting-bytes", seq(0x80, 32), "org.example.rivet", seq(0x00, 32), seq(0x20, 32), seq(0x40, 32))
prove("hashed-labels", h("token"), "com.example.scoreboard", h("F"), h("Nc"), h("Ns"))
prove("non-ascii-application-id", h("token 3"), "café.remote", h("F 3"), h("Nc 3"), h("Ns 3"))
prove("one-byte-application-id", bytes(32), "x", bytes(32), bytes(32), bytes(32))
prove("255-byte-application-id", b"\xff" * 32, "a" * 255, b"\xff" * 32, b"\xff" * 32, b"\xff" * 32)


def check():
    for vector in valid:
        assert parse(vector["text"]) == vector["fields"], vector["name"]
        assert parse(vector["canonical"]) == vector["fields"], vector["name"]
        assert write(parse(vector["text"])) == vector["canonical"], vector["name"]
    for vector in invalid:
        try:
            parse(vector["text"])
        except LinkError as error:
            assert error.kind == vector["error"], (vector["name"], error.kind)
        else:
            raise AssertionError(vector["name"] + " was accepted")
    assert len(next(v for v in valid if v["name"] == "eight-addresses")["fields"]["addresses"]) == MAXIMUM_ADDR
    assert len(valid[-1]["text"].encode()) == MAXIMUM_BYTES and len(invalid[0]["text"].encode()) == MAXIMUM_BYTES + 1
    assert len(host_port(host253, 4)) == 255 and len(app255.encode()) == 255
    assert base64url_decode(T) == TOKEN and len(T) == 43


def shown(text):
    """A link as the document lists it: the fingerprint and token by name, long runs counted,
    control characters and combining marks escaped."""
    if not text:
        return "(empty)"
    out = text.replace(F.upper(), "{FP}").replace(F, "{fp}").replace(T, "{t}")
    out = out.replace("%C3%A9" * 128, "%C3%A9{×128}").replace("%C3%A9" * 127, "%C3%A9{×127}")
    for letter in "xa":
        index = 0
        while index < len(out):
            end = index
            while end < len(out) and out[end] == letter:
                end += 1
            if end - index >= 20:
                out = out[:index] + f"{letter}{{×{end - index}}}" + out[end:]
            index += 1
    return "".join(f"\\u{{{ord(c):04x}}}" if ord(c) < 0x20 or 0x300 <= ord(c) <= 0x36F else c for c in out)


def described(fields):
    app = fields["applicationID"]
    app = app if len(app) <= 24 else f"{len(app.encode())} bytes"
    more = f', addr {" ".join(fields["addresses"])}' if fields["addresses"] else ""
    return f'host {fields["host"] if len(fields["host"]) <= 40 else str(len(fields["host"])) + " characters"}, port {fields["port"]}, app "{app}"{more}'


check()
document = {"fingerprint": F, "token": T, "valid": valid, "invalid": invalid, "proofs": proofs}
if "--markdown" in sys.argv:
    print("```text")
    print("\n".join(f"{v['name']}  → {described(v['fields'])}\n  {shown(v['text'])}"
                    + (f"\n  canonical: {shown(v['canonical'])}" if v["canonical"] != v["text"] else "") for v in valid))
    print("```\n\n```text")
    print("\n".join(f"{v['name']}  → {v['error']}\n  {shown(v['text'])}" for v in invalid))
    print("```")
elif "--check" in sys.argv:
    path = sys.argv[sys.argv.index("--check") + 1]
    with open(path, encoding="utf-8") as file:
        committed = json.load(file)
    if committed != document:
        print(f"{path} differs from what make-link-vectors.py writes", file=sys.stderr)
        sys.exit(1)
else:
    print(json.dumps(document, indent=2, ensure_ascii=False))
