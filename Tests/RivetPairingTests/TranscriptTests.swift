import ByteText
import Foundation
import OpenSSLKit
import RivetState
import Testing

@testable import RivetPairing

/// One golden vector of Fixtures/pairing-vectors.json (written by the independent Python
/// reference implementation beside it).
struct GoldenVector: Decodable, CustomTestStringConvertible {
    let name: String
    let applicationID: String
    let serverFingerprint: String
    let clientNonce: String
    let serverNonce: String
    let commitment: String
    let transcript: String
    let digest: String
    let code: String

    var testDescription: String { name }
}

private struct VectorFile: Decodable {
    let vectors: [GoldenVector]
}

let goldenVectors: [GoldenVector] = {
    let url = Bundle.module.url(forResource: "pairing-vectors", withExtension: "json", subdirectory: "Fixtures")!
    return try! JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url)).vectors
}()

@Suite struct TranscriptTests {
    @Test func thereAreAtLeastThreeGoldenVectors() {
        #expect(goldenVectors.count >= 3)
    }

    @Test(arguments: goldenVectors)
    func goldenVector(_ vector: GoldenVector) throws {
        let transcript = RivetDevicePairingTranscript(
            applicationID: try RivetApplicationID(vector.applicationID),
            serverFingerprint: try #require(SPKIFingerprint(hex: vector.serverFingerprint)),
            clientNonce: try #require(Nonce(hex: vector.clientNonce)),
            serverNonce: try #require(Nonce(hex: vector.serverNonce)))
        #expect(Hex.encode(transcript.encoded) == vector.transcript)
        #expect(Hex.encode(transcript.digest) == vector.digest)
        #expect(transcript.code.text == vector.code)
        #expect(RivetDevicePairingCommitment(to: transcript.clientNonce).hex == vector.commitment)
    }

    /// The vectors published in the protocol document are the ones the tests check.
    @Test func protocolDocumentPublishesTheSameVectors() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs")
        let candidates = ["protocol.md"].map { docs.appendingPathComponent($0) }
        let texts = candidates.compactMap { try? String(contentsOf: $0, encoding: .utf8) }
        let text = try #require(texts.first { $0.contains("rivet-pairing-code-v1") }, "no protocol document describes pairing")
        for vector in goldenVectors {
            for value in [vector.serverFingerprint, vector.clientNonce, vector.serverNonce, vector.commitment, vector.code] {
                #expect(text.contains(value), "the protocol document lacks \(value) of vector \"\(vector.name)\"")
            }
        }
    }

    @Test func transcriptLayoutIsDomainThenLengthPrefixedFields() throws {
        let transcript = RivetDevicePairingTranscript(
            applicationID: try RivetApplicationID("café"), serverFingerprint: fingerprint("F"),
            clientNonce: Nonce(bytes: [UInt8](repeating: 1, count: 32))!,
            serverNonce: Nonce(bytes: [UInt8](repeating: 2, count: 32))!)
        let bytes = transcript.encoded
        let domain = Array("rivet-pairing-code-v1".utf8)
        #expect(Array(bytes.prefix(21)) == domain)
        // "café" is 5 bytes of UTF-8 (4 characters): the prefix counts bytes.
        #expect(Array(bytes[21..<25]) == [0, 0, 0, 5])
        #expect(Array(bytes[25..<30]) == Array("café".utf8))
        #expect(Array(bytes[30..<34]) == [0, 0, 0, 32])
        #expect(Array(bytes[34..<66]) == fingerprint("F").bytes)
        #expect(Array(bytes[66..<70]) == [0, 0, 0, 32])
        #expect(Array(bytes[70..<102]) == [UInt8](repeating: 1, count: 32))
        #expect(Array(bytes[102..<106]) == [0, 0, 0, 32])
        #expect(Array(bytes[106..<138]) == [UInt8](repeating: 2, count: 32))
        #expect(bytes.count == 138)
    }

    @Test func codeIsTheFirstEightDigestBytesModuloOneMillion() throws {
        let vector = goldenVectors[0]
        let digest = try #require(Nonce(hex: vector.digest)).bytes
        let prefix = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(String(format: "%06llu", prefix % 1_000_000) == vector.code)
    }

    /// 2^64 mod 10^6 codes occur once more than the rest: a relative bias of 1/⌊2^64/10^6⌋.
    @Test func moduloBiasIsBelowTheDocumentedBound() {
        let extra = UInt64.max % 1_000_000 + 1  // 2^64 mod 10^6
        let perCode = UInt64.max / 1_000_000  // ⌊2^64 / 10^6⌋ (2^64 mod 10^6 ≠ 0)
        #expect(extra == 551_616)
        #expect(1 / Double(perCode) < 6e-14)
    }

    @Test func changingAnyInputChangesTheCode() throws {
        let base = RivetDevicePairingTranscript(
            applicationID: appID, serverFingerprint: serverFingerprint,
            clientNonce: Nonce(bytes: SHA256.hash(Array("nc".utf8)))!, serverNonce: Nonce(bytes: SHA256.hash(Array("ns".utf8)))!)
        let variants = [
            RivetDevicePairingTranscript(
                applicationID: try RivetApplicationID("org.example.rivet2"), serverFingerprint: base.serverFingerprint,
                clientNonce: base.clientNonce, serverNonce: base.serverNonce),
            RivetDevicePairingTranscript(
                applicationID: appID, serverFingerprint: attackerFingerprint, clientNonce: base.clientNonce,
                serverNonce: base.serverNonce),
            RivetDevicePairingTranscript(
                applicationID: appID, serverFingerprint: serverFingerprint, clientNonce: base.serverNonce,
                serverNonce: base.clientNonce),
        ]
        for variant in variants {
            #expect(variant.code != base.code)
            #expect(variant.digest != base.digest)
        }
    }

    @Test func everyCodeIsSixDigits() throws {
        let randomness = SeededRandomness("six digits")
        for _ in 0..<2000 {
            let code = RivetDevicePairingTranscript(
                applicationID: appID, serverFingerprint: serverFingerprint,
                clientNonce: try Nonce.random(using: randomness), serverNonce: try Nonce.random(using: randomness)
            ).code
            #expect(code.text.utf8.count == 6)
            #expect(code.text.allSatisfy { $0.isASCII && $0.isNumber })
            #expect(ConfirmationCode(code.text) == code)
        }
    }

    @Test func commitmentOpensOnlyToItsNonce() throws {
        let nonce = try Nonce.random(using: RivetSystemRandomness())
        var other = nonce.bytes
        other[31] ^= 1
        let commitment = RivetDevicePairingCommitment(to: nonce)
        #expect(commitment.opens(to: nonce))
        #expect(!commitment.opens(to: Nonce(bytes: other)!))
        // Domain-separated: not the bare hash of the nonce, nor of a length-prefixed nonce alone.
        #expect(commitment.bytes != SHA256.hash(nonce.bytes))
        #expect(commitment.bytes != SHA256.hash([0, 0, 0, 32] + nonce.bytes))
        #expect(RivetDevicePairingCommitment(bytes: commitment.bytes) == commitment)
        #expect(RivetDevicePairingCommitment(bytes: [UInt8](repeating: 0, count: 31)) == nil)
        #expect(RivetDevicePairingCommitment(bytes: [UInt8](repeating: 0, count: 33)) == nil)
    }
}
