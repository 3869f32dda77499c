import ByteText
import Foundation
import OpenSSLKit
import Testing
import ToolTestSupport

@testable import RivetPairing

/// Fixtures/link-vectors.json, written by make-link-vectors.py: an independent Python parser,
/// writer and proof built from docs/protocol.md ("Pairing by link") alone.
struct LinkVectors: Decodable {
    struct Fields: Decodable, Equatable {
        let host: String
        let port: UInt16
        let applicationID: String
        let fingerprint: String
        let token: String
        let addresses: [String]
    }

    struct Valid: Decodable {
        let name: String
        let text: String
        let fields: Fields
        let canonical: String
    }

    struct Invalid: Decodable {
        let name: String
        let text: String
        let error: String
    }

    struct Proof: Decodable {
        let name: String
        let token: String
        let applicationID: String
        let fingerprint: String
        let clientNonce: String
        let serverNonce: String
        let key: String
        let transcript: String
        let proof: String
    }

    let fingerprint: String
    let token: String
    let valid: [Valid]
    let invalid: [Invalid]
    let proofs: [Proof]

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func load() throws -> LinkVectors {
        let url = try #require(Bundle.module.url(forResource: "link-vectors", withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode(LinkVectors.self, from: Data(contentsOf: url))
    }
}

/// The error kind a vector names.
private func linkError(_ name: String) -> RivetPairingLinkError? {
    switch name {
    case "notALink": .notALink
    case "tooLong": .tooLong
    case "malformed": .malformed
    case "invalidHost": .invalidHost
    case "invalidPort": .invalidPort
    case "invalidApplicationID": .invalidApplicationID
    case "invalidFingerprint": .invalidFingerprint
    case "invalidToken": .invalidToken
    case "invalidAddress": .invalidAddress
    default: nil
    }
}

/// Runs python3 with `arguments`; returns its exit status and standard output.
private func python(_ arguments: [String]) throws -> (status: Int32, output: String) {
    // posix_spawn, never Foundation's Process (which can crash while other threads open descriptors).
    let run = try ToolProcess.runProgram(at: "/usr/bin/python3", arguments)
    return (run.status, run.stdout)
}

@Suite struct LinkVectorTests {
    let vectors: LinkVectors

    init() throws { vectors = try LinkVectors.load() }

    private func link(_ fields: LinkVectors.Fields) throws -> RivetPairingLink {
        try RivetPairingLink(
            host: fields.host, port: fields.port, applicationID: try RivetApplicationID(fields.applicationID),
            serverFingerprint: try #require(SPKIFingerprint(hex: fields.fingerprint)),
            token: try #require(Base64.url.decode(fields.token).flatMap { RivetPairingToken(bytes: $0) }),
            additionalAddresses: fields.addresses)
    }

    private func fields(_ link: RivetPairingLink) -> LinkVectors.Fields {
        LinkVectors.Fields(
            host: link.host, port: link.port, applicationID: link.applicationID.value, fingerprint: link.serverFingerprint.hex,
            token: link.token.base64URL, addresses: link.additionalAddresses)
    }

    @Test func everyValidLinkParsesToItsFieldsAndWritesItsCanonicalText() throws {
        #expect(vectors.valid.count >= 15)
        for vector in vectors.valid {
            let parsed = try RivetPairingLink(parsing: vector.text)
            #expect(fields(parsed) == vector.fields, "\(vector.name)")
            #expect(parsed.text == vector.canonical, "\(vector.name)")
            #expect(try link(vector.fields).text == vector.canonical, "\(vector.name)")
            #expect(try RivetPairingLink(parsing: vector.canonical) == parsed, "\(vector.name)")
            #expect(!parsed.description.contains(vector.fields.token), "\(vector.name): the description shows the token")
        }
        let longest = try #require(vectors.valid.first { $0.name == "exactly-2048-bytes" })
        #expect(longest.text.utf8.count == RivetPairingLink.maximumByteCount)
    }

    @Test func everyInvalidLinkIsRefusedWithItsKind() throws {
        #expect(vectors.invalid.count >= 40)
        for vector in vectors.invalid {
            let expected = try #require(linkError(vector.error), "\(vector.name): unknown kind \(vector.error)")
            #expect(throws: expected, "\(vector.name)") { try RivetPairingLink(parsing: vector.text) }
        }
        let tooLong = try #require(vectors.invalid.first { $0.name == "2049-bytes" })
        #expect(tooLong.text.utf8.count == RivetPairingLink.maximumByteCount + 1)
        // Every kind has a vector.
        let kinds = Set(vectors.invalid.map(\.error))
        #expect(kinds == ["notALink", "tooLong", "malformed", "invalidHost", "invalidPort", "invalidApplicationID", "invalidFingerprint", "invalidToken", "invalidAddress"])
    }

    /// The addr bound at its edge: 7 addr parameters (8 addresses) pass, 8 fail; the endpoints
    /// come in the link's order; a link without addr is the one-host link of before.
    @Test func additionalAddressesAreBoundedAndKeptInOrder() throws {
        let eight = try #require(vectors.valid.first { $0.name == "eight-addresses" })
        let parsed = try RivetPairingLink(parsing: eight.text)
        #expect(parsed.additionalAddresses.count == RivetPairingLink.maximumAdditionalAddresses)
        #expect(parsed.endpoints.map(\.description) == (1...8).map { "192.0.2.\($0):4433" })
        let nine = try #require(vectors.invalid.first { $0.name == "nine-addresses" })
        #expect(nine.text.components(separatedBy: "&addr=").count - 1 == RivetPairingLink.maximumAdditionalAddresses + 1)
        #expect(throws: RivetPairingLinkError.invalidAddress) {
            try RivetPairingLink(
                host: parsed.host, port: parsed.port, applicationID: parsed.applicationID,
                serverFingerprint: parsed.serverFingerprint, token: parsed.token,
                additionalAddresses: parsed.additionalAddresses + ["192.0.2.9"])
        }
        // The message names the damaged entry.
        do {
            _ = try RivetPairingLink(parsing: parsed.text + "&addr=192.0.2.02")
            Issue.record("accepted a ninth address")
        } catch {
            #expect(error == .invalidAddress)
        }
        do {
            _ = try RivetPairingLink(parsing: vectors.valid[0].text + "&addr=192.0.2.02")
            Issue.record("accepted 192.0.2.02")
        } catch {
            #expect(error.message.contains("192.0.2.02"), "\(error.message)")
        }
        let old = try RivetPairingLink(parsing: vectors.valid[0].text)
        #expect(old.additionalAddresses.isEmpty && old.endpoints.count == 1)
        let four = try RivetPairingLink(parsing: try #require(vectors.valid.first { $0.name == "four-addresses" }).text)
        #expect(four.endpoints.map(\.description) == ["192.0.2.1:4433", "198.51.100.7:4433", "[fd00:db8:1::1]:4433", "[fd12:3456:789a:1::2]:4433"])
    }

    @Test func everyProofVectorGivesItsKeyTranscriptAndProof() throws {
        #expect(vectors.proofs.count >= 5)
        for vector in vectors.proofs {
            let token = try #require(Base64.url.decode(vector.token).flatMap { RivetPairingToken(bytes: $0) })
            let application = try RivetApplicationID(vector.applicationID)
            let fingerprint = try #require(SPKIFingerprint(hex: vector.fingerprint))
            let clientNonce = try #require(Nonce(hex: vector.clientNonce))
            let serverNonce = try #require(Nonce(hex: vector.serverNonce))
            #expect(Hex.encode(HMACSHA256.authenticate(Array(RivetPairingLinkProof.keyLabel.utf8), key: token.bytes)) == vector.key)
            let transcript = RivetPairingLinkProof.transcript(
                applicationID: application, serverFingerprint: fingerprint, clientNonce: clientNonce, serverNonce: serverNonce)
            #expect(Hex.encode(transcript) == vector.transcript, "\(vector.name)")
            #expect(transcript.count == 24 + 4 + application.value.utf8.count + 3 * 36, "\(vector.name)")
            let proof = RivetPairingLinkProof(
                token: token, applicationID: application, serverFingerprint: fingerprint, clientNonce: clientNonce,
                serverNonce: serverNonce)
            #expect(proof.description == vector.proof, "\(vector.name)")
            #expect(proof == RivetPairingLinkProof(bytes: try #require(Hex.decode(vector.proof))), "\(vector.name)")
        }
    }

    @Test func changingAnyOneInputChangesTheProof() throws {
        let vector = try #require(vectors.proofs.first { $0.name == "hashed-labels" })
        let token = try #require(Base64.url.decode(vector.token))
        let fingerprint = try #require(Hex.decode(vector.fingerprint))
        let clientNonce = try #require(Hex.decode(vector.clientNonce))
        let serverNonce = try #require(Hex.decode(vector.serverNonce))
        func proof(_ token: [UInt8], _ application: String, _ f: [UInt8], _ nc: [UInt8], _ ns: [UInt8]) throws -> RivetPairingLinkProof {
            RivetPairingLinkProof(
                token: try #require(RivetPairingToken(bytes: token)), applicationID: try RivetApplicationID(application),
                serverFingerprint: try #require(SPKIFingerprint(bytes: f)), clientNonce: try #require(Nonce(bytes: nc)),
                serverNonce: try #require(Nonce(bytes: ns)))
        }
        func flipped(_ bytes: [UInt8], bit: Int) -> [UInt8] {
            var copy = bytes
            copy[bit / 8] ^= UInt8(1 << (bit % 8))
            return copy
        }
        let base = try proof(token, vector.applicationID, fingerprint, clientNonce, serverNonce)
        #expect(base.description == vector.proof)
        for bit in [0, 7, 128, 255] {
            #expect(try proof(flipped(token, bit: bit), vector.applicationID, fingerprint, clientNonce, serverNonce) != base)
            #expect(try proof(token, vector.applicationID, flipped(fingerprint, bit: bit), clientNonce, serverNonce) != base)
            #expect(try proof(token, vector.applicationID, fingerprint, flipped(clientNonce, bit: bit), serverNonce) != base)
            #expect(try proof(token, vector.applicationID, fingerprint, clientNonce, flipped(serverNonce, bit: bit)) != base)
        }
        #expect(try proof(token, vector.applicationID + "x", fingerprint, clientNonce, serverNonce) != base)
        #expect(try proof(token, "Com.example.scoreboard", fingerprint, clientNonce, serverNonce) != base)
        // The nonces are bound to their places: swapping them changes the proof.
        #expect(try proof(token, vector.applicationID, fingerprint, serverNonce, clientNonce) != base)
    }

    /// The independent Python implementation still writes exactly the committed fixture (it
    /// checks every vector against its own parser as it writes them).
    @Test func thePythonImplementationWritesTheFixture() throws {
        let script = LinkVectors.fixtures.appendingPathComponent("make-link-vectors.py").path
        let fixture = LinkVectors.fixtures.appendingPathComponent("link-vectors.json").path
        let result = try python([script, "--check", fixture])
        #expect(result.status == 0, "make-link-vectors.py --check: \(result.output)")
    }

    /// The short Python reference implementation printed in docs/protocol.md, run as printed,
    /// reads every link vector and computes every proof as the fixture says.
    @Test func theDocumentsReferenceImplementationAgreesWithEveryVector() throws {
        let root = LinkVectors.fixtures.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let result = try python([
            "-c", Self.referenceCheck, root.appendingPathComponent("docs/protocol.md").path,
            LinkVectors.fixtures.appendingPathComponent("link-vectors.json").path,
        ])
        #expect(result.status == 0, "the document's parse_link and link_proof disagree: \(result.output)")
    }

    /// Runs the document's reference code (the `python` block under "Reference implementation"
    /// of the link part) against the fixture; prints the vectors it gets wrong.
    static let referenceCheck = #"""
import json, sys
doc = open(sys.argv[1], encoding="utf-8").read()
part = doc[doc.index("<!-- part: link -->"):]
part = part[:part.index("<!-- part:", 10)]
code = part[part.index("## Reference implementation"):]
code = code[code.index("```python\n") + 10:]
code = code[:code.index("```")]
exec(code)
vectors = json.load(open(sys.argv[2], encoding="utf-8"))
failures = []
for v in vectors["valid"]:
    host, port, app, fp, token, addresses = parse_link(v["text"])
    f = v["fields"]
    if (host, port, app, fp.hex(), base64.urlsafe_b64encode(token).rstrip(b"=").decode(), addresses) != (f["host"], f["port"], f["applicationID"], f["fingerprint"], f["token"], f["addresses"]):
        failures.append(v["name"])
for v in vectors["invalid"]:
    try:
        parse_link(v["text"]); failures.append(v["name"] + " accepted")
    except ValueError as e:
        if str(e) != v["error"]: failures.append(f"{v['name']}: {e} not {v['error']}")
for p in vectors["proofs"]:
    token = base64.urlsafe_b64decode(p["token"] + "=")
    if link_proof(token, p["applicationID"], bytes.fromhex(p["fingerprint"]), bytes.fromhex(p["clientNonce"]), bytes.fromhex(p["serverNonce"])).hex() != p["proof"]:
        failures.append(p["name"])
print("\n".join(failures))
sys.exit(1 if failures else 0)
"""#

    /// docs/protocol.md ("Pairing by link") lists exactly the vectors the fixture holds: the
    /// link listings as make-link-vectors.py --markdown prints them, and every proof value.
    @Test func theProtocolDocumentShowsTheFixtureVectors() throws {
        let root = LinkVectors.fixtures.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let whole = try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let start = try #require(whole.range(of: "<!-- part: link -->"), "docs/protocol.md has no part link")
        let end = whole.range(of: "<!-- part:", range: start.upperBound..<whole.endIndex)?.lowerBound ?? whole.endIndex
        let part = String(whole[start.upperBound..<end])
        let listing = try python([LinkVectors.fixtures.appendingPathComponent("make-link-vectors.py").path, "--markdown"])
        #expect(listing.status == 0)
        #expect(part.contains(listing.output), "the link listings differ from make-link-vectors.py --markdown")
        #expect(part.contains(vectors.fingerprint) && part.contains(vectors.token))
        // The RVD1 part's pair-link-proof vector carries the proof of the first proof vector.
        let rvd1 = try #require(whole.range(of: "<!-- part: rvd1 -->"))
        let rvd1End = try #require(whole.range(of: "<!-- part:", range: rvd1.upperBound..<whole.endIndex))
        #expect(vectors.proofs.first?.name == "counting-bytes")
        #expect(whole[rvd1.upperBound..<rvd1End.lowerBound].contains(vectors.proofs[0].proof))
        // Each numbered proof vector lists every input and output as a field of its own, and
        // the fields are the fixture's, exactly: the application ID too, not only its title.
        let listed = Self.proofVectors(in: part)
        #expect(listed.map(\.name) == vectors.proofs.map(\.name))
        for vector in vectors.proofs {
            let expected = [
                "applicationID": vector.applicationID, "token": vector.token, "F": vector.fingerprint,
                "Nc": vector.clientNonce, "Ns": vector.serverNonce, "key": vector.key, "proof": vector.proof,
            ]
            #expect(listed.first { $0.name == vector.name }?.fields == expected, "proof vector \(vector.name)")
        }
    }

    /// The proof vectors of the link part: each `N. Title (`name`)` item and its
    /// `- field: `value`` lines (a bold value counts as its text).
    static func proofVectors(in part: String) -> [(name: String, fields: [String: String])] {
        var vectors: [(name: String, fields: [String: String])] = []
        guard let start = part.range(of: "\nProofs (") else { return [] }
        for line in part[start.upperBound...].split(separator: "\n") {
            if line.hasPrefix("## ") { break }
            let text = line.trimmingCharacters(in: .whitespaces)
            if let first = text.first, first.isNumber, text.contains(". "), text.hasSuffix("`)") {
                let name = text.dropLast(2).split(separator: "`").last.map(String.init) ?? ""
                vectors.append((name, [:]))
            } else if text.hasPrefix("- "), !vectors.isEmpty, let colon = text.firstIndex(of: ":") {
                let key = String(text[text.index(text.startIndex, offsetBy: 2)..<colon])
                let value = text[text.index(after: colon)...].split(separator: "`", omittingEmptySubsequences: false)
                guard value.count >= 3 else { continue }
                vectors[vectors.count - 1].fields[key] = String(value[1])
            }
        }
        return vectors
    }
}
