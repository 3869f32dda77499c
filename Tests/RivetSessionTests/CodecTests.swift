import Foundation
import OpenSSLKit
import RivetPairing
import RivetSession
import Testing
import ToolTestSupport

@Suite struct GoldenVectorTests {
    let vectors: RVD1Vectors

    init() throws { vectors = try RVD1Vectors.load() }

    /// Builds the message a valid vector describes from its fields alone.
    func message(_ vector: RVD1Vectors.Valid) throws -> RVD1Message {
        let f = vector.fields
        func text(_ key: String) throws -> String { try #require(f[key]?.text, "\(vector.name).\(key)") }
        func id(_ key: String) throws -> DeviceID { try #require(DeviceID(hex: try text(key))) }
        func nonce(_ key: String) throws -> Nonce { try #require(Nonce(hex: try text(key))) }
        func credential() throws -> PairingCredential {
            try #require(PairingCredential(bytes: bytes(hex: try text("credential"))))
        }
        func application() throws -> RivetApplicationID { try RivetApplicationID(try text("applicationID")) }
        switch vector.name {
        case "resume", "resume-longest":
            return .resume(RVD1Resume(applicationID: try application(), deviceID: try id("deviceID"), credential: try credential()))
        case "pair-begin-new-device", "pair-begin-re-pairing", "pair-begin-longest":
            let existing: DeviceID? = f["existingDeviceID"]?.text == nil ? nil : try id("existingDeviceID")
            let commitment = try #require(RivetDevicePairingCommitment(bytes: bytes(hex: try text("commitment"))))
            return .pairBegin(
                RivetDevicePairBegin(
                    applicationID: try application(), deviceName: try RivetDeviceName(try text("deviceName")),
                    existingDeviceID: existing, commitment: commitment))
        case "pair-server-nonce": return .pairServerNonce(RivetDevicePairServerNonce(nonce: try nonce("nonce")))
        case "pair-reveal": return .pairReveal(RivetDevicePairReveal(nonce: try nonce("nonce")))
        case "pair-confirm": return .pairConfirm
        case "pair-reject": return .pairReject
        case "pair-accepted":
            let secret = try #require(RivetDiscoverySecret(bytes: bytes(hex: try text("discoverySecret"))))
            return .pairAccepted(
                RivetDevicePairAccepted(deviceID: try id("deviceID"), credential: try credential(), discoverySecret: secret))
        case "accept": return .accept
        case "pair-link-begin-new-device", "pair-link-begin-re-pairing", "pair-link-begin-longest":
            let existing: DeviceID? = f["existingDeviceID"]?.text == nil ? nil : try id("existingDeviceID")
            return .pairLinkBegin(
                RivetDevicePairLinkBegin(
                    applicationID: try application(), deviceName: try RivetDeviceName(try text("deviceName")),
                    existingDeviceID: existing, clientNonce: try nonce("clientNonce")))
        case "pair-link-proof":
            return .pairLinkProof(try #require(RivetPairingLinkProof(bytes: bytes(hex: try text("proof")))))
        default:
            let reason = try #require(f["reason"]?.number)
            #expect(vector.name.hasPrefix("reject-"))
            return .reject(RVD1RejectReason(rawValue: UInt8(reason)))
        }
    }

    @Test func everyMessageTypeHasAVector() throws {
        let covered = Set(try vectors.valid.map { try message($0).type })
        #expect(covered == Set(RVD1MessageType.allCases))
        #expect(vectors.magic == hex(RVD1.magic))
        #expect(vectors.linkMagic == hex(RVD1.linkMagic))
        for vector in vectors.valid {
            #expect(try message(vector).type.version == vector.version, "\(vector.name)")
        }
        let reasons = try vectors.valid.compactMap { vector -> RVD1RejectReason? in
            if case .reject(let reason) = try message(vector) { reason } else { nil }
        }
        #expect(reasons == RVD1RejectReason.known)
        for vector in vectors.valid where vector.name.hasPrefix("reject-") {
            #expect(vector.name == "reject-" + (try message(vector)).description.dropFirst(7).dropLast())
        }
    }

    @Test func encodingMatchesEveryVector() throws {
        for vector in vectors.valid {
            let built = try message(vector)
            #expect(hex(built.encoded) == vector.hex, "\(vector.name)")
            #expect(built.type.direction == direction(vector.direction), "\(vector.name)")
        }
    }

    @Test func decodingEveryVectorGivesItsFieldsWholeAndByteByByte() throws {
        for vector in vectors.valid {
            let side = direction(vector.direction)
            let magic = vector.version == 2 ? RVD1.linkMagic : RVD1.magic
            let input = (side == .clientToServer ? magic : []) + bytes(hex: vector.hex)
            for chunk in [Int.max, 1, 3] {
                let (messages, consumed) = try readAll(input, direction: side, chunk: chunk)
                #expect(messages == [try message(vector)], "\(vector.name) in chunks of \(chunk)")
                #expect(consumed == input.count)
            }
        }
    }

    /// A server's reader takes each whole preface (RVD1 or RVD2 magic, then its messages) and
    /// gives back exactly the messages of the valid vectors it names.
    @Test func everyPrefaceIsReadAsItsMessages() throws {
        let byName = Dictionary(uniqueKeysWithValues: vectors.valid.map { ($0.name, $0) })
        #expect(vectors.prefaces.contains { $0.hex.hasPrefix(vectors.linkMagic) })
        for preface in vectors.prefaces {
            let expected = try preface.messages.map { try message(try #require(byName[$0], "\(preface.name): \($0)")) }
            let versions = Set(try preface.messages.map { try #require(byName[$0]).version })
            let magic = versions.contains(2) ? vectors.linkMagic : String(preface.hex.prefix(8))
            #expect(preface.hex == magic + preface.messages.map { byName[$0]!.hex }.joined(), "\(preface.name)")
            for chunk in [Int.max, 1] {
                let (messages, consumed) = try readAll(bytes(hex: preface.hex), direction: .clientToServer, chunk: chunk)
                #expect(messages == expected, "\(preface.name)")
                #expect(consumed == preface.hex.count / 2)
            }
        }
    }

    @Test func everyInvalidVectorIsRefusedWithItsErrorAfterItsByteCount() throws {
        #expect(!vectors.invalid.isEmpty)
        for vector in vectors.invalid {
            // Each server-to-client vector names the version a client's reader assumes, and it is
            // the one RVD1Reader reads a server with; client-to-server input names it by its magic.
            if direction(vector.direction) == .serverToClient {
                #expect(vector.version == RVD1Reader(reading: .serverToClient).version, "\(vector.name)")
            } else {
                #expect(vector.version == nil, "\(vector.name)")
            }
            let expected = try #require(errorKind(vector.error), "\(vector.name)")
            let input = bytes(hex: vector.hex)
            let result = try #require(firstError(input, direction: direction(vector.direction)), "\(vector.name) was accepted")
            #expect(result.error == expected, "\(vector.name): \(result.error.message)")
            #expect(result.fed == vector.consumedBeforeError, "\(vector.name)")
            #expect(!result.error.message.isEmpty)
        }
    }

    /// The independent Python encoder still writes exactly the committed fixture.
    @Test func thePythonEncoderWritesTheFixture() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        // posix_spawn, never Foundation's Process (which can crash while other threads open descriptors).
        let run = try ToolProcess.runProgram(at: "/usr/bin/python3", [fixtures.appendingPathComponent("make-rvd1-vectors.py").path])
        let written = Data(run.stdout.utf8)
        #expect(run.status == 0)
        let committed = try Data(contentsOf: fixtures.appendingPathComponent("rvd1-vectors.json"))
        #expect(written == committed, "make-rvd1-vectors.py no longer writes Fixtures/rvd1-vectors.json")
    }

    /// The listings in docs/protocol.md (RVD1 part) are the fixture's bytes, vector by vector.
    @Test func theProtocolDocumentShowsTheFixtureVectors() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let whole = try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let part = try #require(whole.range(of: "<!-- part: rvd1 -->"))
        let partEnd = whole.range(of: "<!-- part:", range: part.upperBound..<whole.endIndex)?.lowerBound ?? whole.endIndex
        let document = String(whole[part.upperBound..<partEnd])
        let start = try #require(document.range(of: "## 6. Golden vectors"))
        let end = try #require(document.range(of: "## 7.", range: start.upperBound..<document.endIndex))
        var listed: [String: (header: String, hex: String)] = [:]
        var current: String?
        var inBlock = false
        for line in document[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inBlock.toggle()
                current = nil
                continue
            }
            guard inBlock, !line.isEmpty else { continue }
            if line.hasPrefix("  ") {
                let name = try #require(current)
                let token = line.split(separator: " ").first.map(String.init) ?? ""
                listed[name]!.hex += token
            } else {
                let parts = line.split(separator: " ", maxSplits: 1)
                current = String(parts[0])
                listed[current!] = (String(parts.count > 1 ? parts[1] : ""), "")
            }
        }
        #expect(listed.count == vectors.valid.count + vectors.prefaces.count + vectors.invalid.count)
        for vector in vectors.valid {
            let entry = try #require(listed[vector.name], "\(vector.name) missing from the document")
            #expect(entry.hex == vector.hex, "\(vector.name)")
            #expect(entry.header.contains("\(vector.direction), \(vector.hex.count / 2) bytes"), "\(vector.name)")
            #expect(entry.header.contains("RVD2") == (vector.version == 2), "\(vector.name)")
        }
        for preface in vectors.prefaces {
            let entry = try #require(listed[preface.name], "\(preface.name) missing from the document")
            #expect(entry.hex == preface.hex, "\(preface.name)")
            #expect(entry.header.contains("clientToServer preface, \(preface.hex.count / 2) bytes"), "\(preface.name)")
        }
        for vector in vectors.invalid {
            let entry = try #require(listed[vector.name], "\(vector.name) missing from the document")
            #expect(entry.hex == vector.hex, "\(vector.name)")
            #expect(entry.header.contains("refused as \(vector.error) after \(vector.consumedBeforeError) bytes"), "\(vector.name)")
            // Server-to-client input has no magic: its header names the version the client's
            // reader assumes, and client-to-server input's magic names its own.
            let version = vector.version.map { "RVD\($0), " } ?? ""
            #expect(
                entry.header.trimmingCharacters(in: .whitespaces).hasPrefix("(\(vector.direction), \(version)refused as "),
                "\(vector.name): \(entry.header)")
        }
    }
}

@Suite struct ReaderTests {
    let resume = RVD1Message.resume(RVD1Resume(applicationID: testApplication, deviceID: testDeviceID, credential: testCredential))

    @Test func theReaderNeverTakesAByteOfWhatFollowsThePreface() throws {
        let stream: [UInt8] = Array("RVT1 stream bytes".utf8)
        let input = RVD1.magic + resume.encoded + stream
        var reader = RVD1Reader(reading: .clientToServer)
        var offset = 0
        var message: RVD1Message?
        while message == nil {
            #expect(reader.bytesNeeded > 0)
            // Hand the reader everything that is left: it must still stop at the message's end.
            let result = try reader.consume(input[offset...])
            offset += result.consumed
            message = result.message
        }
        #expect(message == resume)
        #expect(Array(input[offset...]) == stream)
        #expect(reader.isAtMessageBoundary)
    }

    @Test func bytesNeededNamesExactlyEachPiece() throws {
        var reader = RVD1Reader(reading: .clientToServer)
        #expect(reader.bytesNeeded == 4)
        _ = try reader.consume(RVD1.magic.prefix(3))
        #expect(reader.bytesNeeded == 1)
        _ = try reader.consume(RVD1.magic.suffix(1))
        #expect(reader.bytesNeeded == 5)
        let encoded = resume.encoded
        _ = try reader.consume(encoded.prefix(5))
        #expect(reader.bytesNeeded == encoded.count - 5)
        let (consumed, message) = try reader.consume(encoded.dropFirst(5))
        #expect(consumed == encoded.count - 5)
        #expect(message == resume)
        #expect(reader.bytesNeeded == 5)

        var client = RVD1Reader(reading: .serverToClient)
        #expect(client.bytesNeeded == 5)
        #expect(try client.consume(RVD1Message.accept.encoded).message == .accept)
    }

    @Test func severalMessagesInOneChunkComeOutOneAtATime() throws {
        let input = RVD1Message.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceS)).encoded + RVD1Message.reject(.windowClosed).encoded
        let (messages, consumed) = try readAll(input, direction: .serverToClient)
        #expect(messages == [.pairServerNonce(RivetDevicePairServerNonce(nonce: testNonceS)), .reject(.windowClosed)])
        #expect(consumed == input.count)
    }

    @Test func limitsHoldAtTheirEdges() throws {
        let longestApplication = try RivetApplicationID(String(repeating: "a", count: 255))
        let longest = RVD1Message.resume(RVD1Resume(applicationID: longestApplication, deviceID: testDeviceID, credential: testCredential))
        #expect(longest.encoded.count == 5 + RVD1MessageType.resume.maximumBodyLength)
        #expect(try readAll(RVD1.magic + longest.encoded, direction: .clientToServer).messages == [longest])

        let begin = RVD1Message.pairBegin(
            RivetDevicePairBegin(
                applicationID: longestApplication, deviceName: try RivetDeviceName(String(repeating: "n", count: 128)),
                existingDeviceID: testDeviceID, commitment: RivetDevicePairingCommitment(to: testNonceC)))
        #expect(begin.body.count == RVD1MessageType.pairBegin.maximumBodyLength)
        #expect(RVD1MessageType.pairBegin.maximumBodyLength == 434)
        #expect(RVD1MessageType.resume.maximumBodyLength == 304)
        #expect(RVD1MessageType.allCases.allSatisfy { $0.maximumBodyLength <= RVD1.maximumBodyLength })

        #expect(RVD1MessageType.pairLinkBegin.maximumBodyLength == 434)
        #expect(RVD1MessageType.pairLinkBegin.minimumBodyLength == 37)
        #expect(RVD1MessageType.pairLinkProof.minimumBodyLength == 32 && RVD1MessageType.pairLinkProof.maximumBodyLength == 32)

        // A client's magic names the version whose types follow: RVD2 for pairing by link.
        func magic(_ type: RVD1MessageType) -> [UInt8] { type.version == 2 ? RVD1.linkMagic : RVD1.magic }
        // One past each header limit is refused at the header, before the body.
        for type in RVD1MessageType.allCases {
            let length = type.maximumBodyLength + 1
            let header: [UInt8] = [type.rawValue, 0, 0, UInt8(length >> 8), UInt8(length & 0xFF)]
            let input = (type.direction == .clientToServer ? magic(type) : []) + header
            let failure = try #require(firstError(input, direction: type.direction))
            #expect(failure.error == .oversized, "\(type)")
            #expect(failure.fed == input.count)
        }
        // One short of each minimum is malformed, also at the header.
        for type in RVD1MessageType.allCases where type.minimumBodyLength > 0 {
            let length = type.minimumBodyLength - 1
            let header: [UInt8] = [type.rawValue, 0, 0, 0, UInt8(length)]
            let input = (type.direction == .clientToServer ? magic(type) : []) + header
            #expect(firstError(input, direction: type.direction)?.error == .malformed, "\(type)")
        }
    }

    /// RVD2's types are undefined after the RVD1 magic, whatever their length: refused at the
    /// header as unknown, exactly as a version 1 server refuses them. After RVD2 they are read.
    @Test func linkTypesAreUnknownUnderTheVersion1Magic() throws {
        let proof = RVD1Message.pairLinkProof(RivetPairingLinkProof(bytes: counting(from: 0x80, 32))!)
        let begin = RVD1Message.pairLinkBegin(
            RivetDevicePairLinkBegin(
                applicationID: testApplication, deviceName: try RivetDeviceName("phone"), existingDeviceID: nil,
                clientNonce: testNonceC))
        for type in RVD1MessageType.allCases where type.version == 2 {
            for length in [type.minimumBodyLength, type.maximumBodyLength, type.maximumBodyLength + 1] {
                let input = RVD1.magic + [type.rawValue, 0, 0, UInt8(length >> 8), UInt8(length & 0xFF)]
                let failure = try #require(firstError(input, direction: .clientToServer), "\(type)")
                #expect(failure.error == .unknownMessageType, "\(type) length \(length)")
                #expect(failure.fed == input.count)
                #expect(failure.error.rejectReason == .malformed)
            }
        }
        #expect(firstError(RVD1.magic + begin.encoded, direction: .clientToServer)?.error == .unknownMessageType)
        #expect(firstError(RVD1.magic + proof.encoded, direction: .clientToServer)?.error == .unknownMessageType)
        #expect(try readAll(RVD1.linkMagic + begin.encoded + proof.encoded, direction: .clientToServer).messages == [begin, proof])
        // A version 1 type stays valid under RVD2.
        #expect(try readAll(RVD1.linkMagic + resume.encoded, direction: .clientToServer).messages == [resume])
        // 0x0c is defined by neither.
        #expect(firstError(RVD1.linkMagic + [0x0C, 0, 0, 0, 0], direction: .clientToServer)?.error == .unknownMessageType)
    }

    @Test func decodingABodyDirectlyChecksItsLimit() {
        #expect(throws: RVD1Error.oversized) { try RVD1Message.decode(type: .accept, body: [0]) }
        #expect(throws: RVD1Error.malformed) { try RVD1Message.decode(type: .reject, body: []) }
    }

    @Test func aFailedReaderKeepsFailing() throws {
        var reader = RVD1Reader(reading: .clientToServer)
        #expect(throws: RVD1Error.badMagic) { try reader.consume(Array("HTTP".utf8)) }
        #expect(reader.bytesNeeded == 0)
        #expect(throws: RVD1Error.badMagic) { try reader.consume(RVD1.magic) }
        #expect(throws: RVD1Error.badMagic) { try reader.finish() }
    }

    @Test func endingInsideAPieceIsTruncatedAndBetweenMessagesIsNot() throws {
        var fresh = RVD1Reader(reading: .clientToServer)
        try fresh.finish()

        var insideMagic = RVD1Reader(reading: .clientToServer)
        _ = try insideMagic.consume(RVD1.magic.prefix(2))
        #expect(throws: RVD1Error.truncated) { try insideMagic.finish() }

        var afterMagic = RVD1Reader(reading: .clientToServer)
        _ = try afterMagic.consume(RVD1.magic)
        try afterMagic.finish()

        var insideBody = RVD1Reader(reading: .clientToServer)
        _ = try insideBody.consume(RVD1.magic)
        _ = try insideBody.consume(resume.encoded.prefix(5))
        _ = try insideBody.consume(resume.encoded.dropFirst(5).prefix(10))
        #expect(insideBody.bytesNeeded == resume.encoded.count - 15)
        #expect(throws: RVD1Error.truncated) { try insideBody.finish() }

        var insideHeader = RVD1Reader(reading: .serverToClient)
        _ = try insideHeader.consume([0x08, 0])
        #expect(throws: RVD1Error.truncated) { try insideHeader.finish() }
    }

    @Test func versionErrorsMapToTheirRejectReason() throws {
        #expect(throws: RVD1Error.unsupportedVersion) { try RVD1Reader.checkMagic(Array("RVD9".utf8)) }
        #expect(throws: RVD1Error.unsupportedVersion) { try RVD1Reader.checkMagic(Array("RVD3".utf8)) }
        #expect(throws: RVD1Error.unsupportedVersion) { try RVD1Reader.checkMagic(Array("RVD0".utf8)) }
        #expect(try RVD1Reader.checkMagic(Array("RVD1".utf8)) == 1)
        #expect(try RVD1Reader.checkMagic(Array("RVD2".utf8)) == 2)
        #expect(throws: RVD1Error.badMagic) { try RVD1Reader.checkMagic(Array("RVDx".utf8)) }
        #expect(throws: RVD1Error.badMagic) { try RVD1Reader.checkMagic(Array("rvd1".utf8)) }
        #expect(RVD1Error.unsupportedVersion.rejectReason == .versionUnsupported)
        for error in [RVD1Error.badMagic, .unknownMessageType, .wrongDirection, .oversized, .malformed, .truncated, .unexpectedMessage] {
            #expect(error.rejectReason == .malformed)
        }
    }

    @Test func textFormsNeverShowTheCredential() {
        let credentialHex = hex(testCredential.bytes)
        let accepted = RVD1Message.pairAccepted(RivetDevicePairAccepted(deviceID: testDeviceID, credential: testCredential, discoverySecret: testDiscoverySecret))
        let secretHex = hex(testDiscoverySecret.bytes)
        for message in [resume, accepted] {
            #expect(!message.description.contains(credentialHex))
            #expect(!String(describing: message).contains(credentialHex))
            #expect(!message.description.contains(secretHex))
            #expect(!String(reflecting: message).contains(secretHex))
            #expect(message.description.contains("redacted"))
        }
    }

    @Test func unknownRejectReasonsDecodeAndExplainThemselves() throws {
        let (messages, _) = try readAll([0x09, 0, 0, 0, 1, 200], direction: .serverToClient)
        #expect(messages == [.reject(RVD1RejectReason(rawValue: 200))])
        #expect(RVD1RejectReason(rawValue: 200).name == "reason 200")
        #expect(RVD1RejectReason(rawValue: 200).explanation.contains("200"))
        #expect(Set(RVD1RejectReason.known.map(\.name)).count == 11)
    }

    @Test func pairingRefusalsMapToTheirRejectReasons() {
        let table: [(RivetDevicePairingRefusal, RVD1RejectReason)] = [
            (.windowClosed, .windowClosed), (.windowExpired, .windowClosed), (.cancelled, .windowClosed),
            (.attemptInProgress, .attemptInProgress), (.rejectedByDevice, .rejectedByPerson),
            (.rejectedByDesktop, .rejectedByPerson), (.codeMismatch, .rejectedByPerson),
            (.tooManyFailures, .tooManyFailures), (.commitmentMismatch, .pairingFailed),
            (.unexpectedMessage, .pairingFailed), (.noAttempt, .pairingFailed), (.connectionLost, .pairingFailed),
            (.randomnessUnavailable, .pairingFailed), (.linkProofMismatch, .linkRefused), (.linkRequired, .windowClosed),
            (.linkNotOpen, .windowClosed),
        ]
        for (refusal, reason) in table {
            #expect(RVD1RejectReason(refusal) == reason, "\(refusal)")
        }
    }
}

/// The fuzz corpus (Tests/Fuzz/corpus/rvd1) replayed through the reader: every decoded message
/// re-encodes to the exact bytes it came from, and no reader takes a byte past what it needs.
@Suite struct FuzzCorpusTests {
    @Test func theCorpusReplaysWithoutABrokenInvariant() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let directory = root.appendingPathComponent("Fuzz/corpus/rvd1")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names.count >= 39)
        for name in names {
            let input = Array(try Data(contentsOf: directory.appendingPathComponent(name)).dropFirst())
            for side in [RVD1Direction.clientToServer, .serverToClient] {
                var reader = RVD1Reader(reading: side)
                var offset = 0
                var start = side == .clientToServer ? 4 : 0
                while offset < input.count {
                    let needed = reader.bytesNeeded
                    guard let (consumed, message) = try? reader.consume(input[offset...]) else { break }
                    #expect(consumed <= needed && consumed > 0, "\(name)")
                    offset += consumed
                    if let message {
                        #expect(message.encoded == Array(input[start..<offset]), "\(name)")
                        start = offset
                    }
                }
            }
        }
    }
}
