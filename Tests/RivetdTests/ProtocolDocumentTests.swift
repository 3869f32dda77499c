import Foundation
import Glibc
import OpenSSLKit
import RivetControl
import RivetPairing
import RivetSession
import RivetWire
import TestSupport
import Testing
import ToolTestSupport

/// docs/protocol.md is the wire: each test reads what the document states about rivetd's
/// behaviour (a table or a paragraph) and checks it against the real rivetd over real TLS.
@Suite(.serialized) struct ProtocolDocumentTests {
    /// The repository's root directory.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The text of one part of docs/protocol.md (`rvt1`, `rvd1`, `pairing`, …).
    static func part(_ name: String) throws -> String {
        let whole = try String(contentsOf: root.appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        let start = try #require(whole.range(of: "<!-- part: \(name) -->"), "docs/protocol.md has no part \(name)")
        let end = whole.range(of: "<!-- part:", range: start.upperBound..<whole.endIndex)?.lowerBound ?? whole.endIndex
        return String(whole[start.upperBound..<end])
    }

    /// The body rows of the Markdown table whose header row starts with `header`, each as its
    /// trimmed cells.
    static func table(_ text: String, header: String) throws -> [[String]] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix(header) }, "no table starts with \(header)")
        return lines[(start + 2)...].prefix { $0.hasPrefix("|") }.map { row in
            row.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// The text between the first pair of backticks in `cell`.
    static func quoted(_ cell: String) -> String? {
        let parts = cell.split(separator: "`", omittingEmptySubsequences: false)
        return parts.count >= 3 ? String(parts[1]) : nil
    }

    /// The bytes of hex digits written with spaces between fields.
    static func bytes(_ hex: String) throws -> [UInt8] {
        let digits = Array(hex.filter { $0 != " " })
        try #require(digits.count % 2 == 0, "odd hex \(hex)")
        return try stride(from: 0, to: digits.count, by: 2).map { index in
            try #require(UInt8(String(digits[index...index + 1]), radix: 16), "not hex: \(hex)")
        }
    }

    /// Call arguments of exactly `size` bytes.
    static func arguments(size: Int) -> [UInt8] {
        let head = #"{"game-id":"big","pad":""#
        return Array((head + String(repeating: "x", count: size - head.utf8.count - 2) + #""}"#).utf8)
    }

    @Test("RVT1 §4: rivetd serves 524 288 bytes, answers 524 289 … 1 048 576 with rivet.request-too-large and keeps the session, and closes on 1 048 577 with rvt1.payload-too-large")
    func payloadBounds() async throws {
        let rows = try Self.table(try Self.part("rvt1"), header: "| Payload a device sends to rivetd")
        let documented = rows.map { row in
            (bounds: row[0].split(separator: "…").map { Int($0.filter(\.isNumber)) ?? -1 }, code: Self.quoted(row[1]))
        }
        #expect(documented.map(\.bounds) == [[0, 524_288], [524_289, 1_048_576], [1_048_577]])
        #expect(documented.map(\.code) == [nil, "rivet.request-too-large", "rvt1.payload-too-large"])

        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Big", scopes: ["viewer"]))
            defer { raw.close() }
            var id: UInt64 = 0
            for (bounds, code) in documented {
                for size in bounds where size > 0 {
                    id += 1
                    let frame = RVT1Frame.call(RVT1RequestID(id), name: "current-score", payload: Self.arguments(size: size))
                    switch code {
                    case nil:
                        let answer = try await raw.call(id, "current-score", String(decoding: frame.payload, as: UTF8.self))
                        #expect(answer.kind == .result && answer.requestID == RVT1RequestID(id), "\(size) bytes: \(answer)")
                    case "rivet.request-too-large"?:
                        try await raw.send(frame)
                        let answer = try #require(try await raw.next())
                        #expect(answer.kind == .error && answer.name == code && answer.requestID == RVT1RequestID(id), "\(size) bytes")
                        // The session carries on.
                        id += 1
                        #expect(try await raw.call(id, "current-score", #"{"game-id":"after"}"#).kind == .result)
                    default:
                        // The header alone: the refusal is due before any payload byte.
                        let encoded = try RVT1Encoder(limits: RawSession.limits).encode(frame)
                        try await raw.sendBytes(Array(encoded.prefix(RVT1.headerSize)))
                        let farewell = try #require(try await raw.next())
                        #expect(farewell.kind == .error && farewell.name == code && farewell.requestID == .none, "\(size) bytes")
                        #expect(try await raw.next() == nil, "the session closes after \(code ?? "")")
                    }
                }
            }
        }
    }

    @Test("RVT1 §12: each frame of the table gets the documented stream error with request ID 0, then the close")
    func streamErrors() async throws {
        let rows = try Self.table(try Self.part("rvt1"), header: "| the device sends | after a hello |")
        let codes = try rows.map { try #require(Self.quoted($0[2])) }
        #expect(codes == [
            "rvt1.missing-hello", "rvt1.unexpected-hello", "rvt1.invalid-request-id", "rvt1.reserved-flags",
            "rivet.protocol-violation", "rivet.protocol-violation",
        ])
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Rude", scopes: ["viewer"])
            for (row, code) in zip(rows, codes) {
                let frame = try Self.bytes(try #require(Self.quoted(row[0])))
                let raw = try await daemon.raw(credential, hello: row[1] == "yes")
                defer { raw.close() }
                try await raw.sendBytes(frame)
                let farewell = try #require(try await raw.next(), "\(row[0]): no answer")
                #expect(farewell.kind == .error && farewell.requestID == .none && farewell.name == code, "\(row[0]): \(farewell)")
                #expect(try await raw.next() == nil, "\(row[0]): the session stays open")
            }
        }
    }

    @Test("RVT1 §12: a session that may write and read a key gets its own write back as a state-change, after the result")
    func stateWriteEchoesToTheWriter() async throws {
        let rvt1 = try Self.part("rvt1").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(rvt1.contains("A session that may both write and read a key therefore gets its own write back as a `state-change`."))
        try await withDaemon(try Home()) { daemon in
            let both = try await daemon.raw(try daemon.pairDirectly(name: "Both", scopes: ["viewer", "controller"]))
            let writer = try await daemon.raw(try daemon.pairDirectly(name: "Writer", scopes: ["controller"]))
            defer {
                both.close()
                writer.close()
            }
            try await both.send(.stateWrite(RVT1RequestID(1), key: "home-team", payload: Array(#""Tigers""#.utf8)))
            let result = try #require(try await both.next())
            #expect(result.kind == .result && result.requestID == RVT1RequestID(1) && result.text == "{}")
            let echo = try #require(try await both.next())
            #expect(echo.kind == .stateChange && echo.name == "home-team" && echo.text == #""Tigers""#)
            // A writer without state-read gets the result only.
            try await writer.send(.stateWrite(RVT1RequestID(1), key: "home-team", payload: Array(#""Bears""#.utf8)))
            #expect(try await writer.next()?.kind == .result)
            #expect(try await both.next()?.text == #""Bears""#)
            #expect(try await writer.isQuiet(for: .milliseconds(500)))
        }
    }

    /// Sends `input` over a TLS connection pinned to `pin` and returns everything the server
    /// sends until it closes.
    static func prefaceReply(to input: [UInt8], port: UInt16, pin: SPKIFingerprint) throws -> [UInt8] {
        let connection = try TLSConnection(socket: try connectTCP(port: port), context: try TLSClientContext(verification: .pinned(pin)))
        defer { connection.close() }
        let end = ContinuousClock.now + .seconds(10)
        try connection.handshake(deadline: end)
        try connection.write(input, deadline: end)
        var bytes: [UInt8] = []
        while true {
            do throws(TLSError) {
                let chunk = try connection.read(maxCount: 4096, deadline: end)
                if chunk.isEmpty { return bytes }
                bytes += chunk
            } catch {
                if error == .closed { return bytes }
                throw error
            }
        }
    }

    /// Pairs by link as far as the server lets it: over a connection pinned to `pin`, sends the
    /// magic `magic` and `first`; when the server answers with `PairServerNonce`, sends the
    /// proof of `token` for this connection; returns every message the server sent until it
    /// closed.
    static func linkExchange(
        magic: [UInt8], first: RVD1Message, token: RivetPairingToken, applicationID: RivetApplicationID, port: UInt16,
        pin: SPKIFingerprint
    ) throws -> [RVD1Message] {
        let connection = try TLSConnection(socket: try connectTCP(port: port), context: try TLSClientContext(verification: .pinned(pin)))
        defer { connection.close() }
        let end = ContinuousClock.now + .seconds(20)
        try connection.handshake(deadline: end)
        try connection.write(magic + first.encoded, deadline: end)
        var reader = RVD1Reader(reading: .serverToClient)
        var messages: [RVD1Message] = []
        while true {
            let chunk: [UInt8]
            do throws(TLSError) {
                chunk = try connection.read(maxCount: reader.bytesNeeded, deadline: end)
            } catch {
                if error == .closed { return messages }
                throw error
            }
            if chunk.isEmpty { return messages }
            guard let message = try reader.consume(chunk).message else { continue }
            messages.append(message)
            if case .pairServerNonce(let nonce) = message, case .pairLinkBegin(let begin) = first {
                let proof = RivetPairingLinkProof(
                    token: token, applicationID: applicationID, serverFingerprint: pin, clientNonce: begin.clientNonce,
                    serverNonce: nonce.nonce)
                try connection.write(RVD1Message.pairLinkProof(proof).encoded, deadline: end)
            }
        }
    }

    @Test("RVD1 §3 and the link part: a link window refuses PairBegin, a wrong proof gets linkRefused, a used link closes the window as link-used")
    func pairingByLink() async throws {
        let reasons = try Self.table(try Self.part("rvd1"), header: "| reason | name |")
        #expect(reasons.contains { $0[0] == "11" && Self.quoted($0[1]) == RVD1RejectReason.linkRefused.name })
        let control = try Self.part("control")
        #expect(control.contains("`\"link-used\"`") && control.contains("`by_link`"))

        try await withDaemon(try Home()) { daemon in
            let (port, pin) = (daemon.port, daemon.fingerprint)
            // `open` with `link` and no `link_host`: the listening address, port and key.
            let opened = try await daemon.request(.open(link: RivetControlLinkRequest(host: nil)))
            let link = try RivetPairingLink(parsing: try #require(opened["link"]?.string))
            #expect(link.host == "127.0.0.1" && link.port == port && link.serverFingerprint == pin)
            #expect(link.applicationID.value == testApplication)
            #expect(opened["seconds_left"]?.integer.map { (290...300).contains($0) } == true)
            #expect(try await daemon.request(.pending)["link"] == .bool(true))
            #expect(!daemon.log.contains(link.token.base64URL), "rivetd logged the token")

            let name = try RivetDeviceName("Linked Phone")
            let begin = RVD1Message.pairLinkBegin(
                RivetDevicePairLinkBegin(
                    applicationID: link.applicationID, deviceName: name, existingDeviceID: nil,
                    clientNonce: Nonce(bytes: try SecureRandom.bytes(32))!))
            // Pairing by code in a link window: windowClosed, not a failure.
            let codeBegin = RVD1Message.pairBegin(
                RivetDevicePairBegin(
                    applicationID: link.applicationID, deviceName: name, existingDeviceID: nil,
                    commitment: RivetDevicePairingCommitment(to: Nonce(bytes: try SecureRandom.bytes(32))!)))
            let byCode = try await offPool {
                try Self.linkExchange(magic: RVD1.magic, first: codeBegin, token: link.token, applicationID: link.applicationID, port: port, pin: pin)
            }
            #expect(byCode == [.reject(.windowClosed)])
            #expect(try await daemon.request(.pending)["failures"]?.integer == 0)

            // A wrong token's proof: linkRefused, one failure, the window stays open.
            var wrong = link.token.bytes
            wrong[0] ^= 1
            let wrongToken = try #require(RivetPairingToken(bytes: wrong))
            let refused = try await offPool {
                try Self.linkExchange(magic: RVD1.linkMagic, first: begin, token: wrongToken, applicationID: link.applicationID, port: port, pin: pin)
            }
            #expect(refused.count == 2 && refused.last == .reject(.linkRefused), "\(refused)")
            let afterWrong = try await daemon.request(.pending)
            #expect(afterWrong["failures"]?.integer == 1 && afterWrong["window"]?.string == "open")

            // The right proof: the attempt is by link and device-confirmed; the desktop's person
            // rejects it, and the used link closes the window.
            let token = link.token
            let device = Task {
                try await offPool {
                    try Self.linkExchange(magic: RVD1.linkMagic, first: begin, token: token, applicationID: link.applicationID, port: port, pin: pin)
                }
            }
            try await eventually("the attempt by link to be device-confirmed") {
                let attempt = try await daemon.request(.pending)["attempt"]
                return attempt?["by_link"] == .bool(true) && attempt?["device_confirmed"] == .bool(true)
                    && attempt?["code"] == .null
            }
            _ = try await daemon.request(.reject)
            #expect(try await device.value.last == .reject(.rejectedByPerson))
            let closed = try await daemon.request(.pending)
            #expect(closed["window"]?.string == "closed" && closed["closed_because"]?.string == "link-used")
            #expect(closed["link"] == .bool(false))

            // A code window refuses PairLinkBegin (windowClosed, not a failure).
            _ = try await daemon.request(.open())
            let inCodeWindow = try await offPool {
                try Self.linkExchange(magic: RVD1.linkMagic, first: begin, token: token, applicationID: link.applicationID, port: port, pin: pin)
            }
            #expect(inCodeWindow == [.reject(.windowClosed)])
            #expect(try await daemon.request(.pending)["failures"]?.integer == 0)
            _ = try await daemon.request(.cancel)

            // A link_host that is not a host: invalid-argument, and no window.
            await #expect(throws: RivetControlError.invalidArgument) {
                try await daemon.request(.open(link: RivetControlLinkRequest(host: "kitchen_desktop")))
            }
            #expect(try await daemon.request(.pending)["window"]?.string == "closed")
        }
    }

    @Test("RVD1 §6: every refusal vector a client can send gets the Reject the document names, then the close")
    func rvd1Refusals() async throws {
        let rows = try Self.table(try Self.part("rvd1"), header: "| refusal | the bytes |")
        var answers: [String: RVD1RejectReason] = [:]
        for row in rows {
            let reason = try #require(row[3].split(separator: "(").last?.split(separator: ")").first.map(String.init))
            let named = RVD1RejectReason.known.filter { $0.name == reason }
            #expect(named.count == 1, "unknown reason \(reason)")
            answers[try #require(Self.quoted(row[0]))] = named.first
        }
        #expect(answers == [
            "badMagic": .malformed, "unsupportedVersion": .versionUnsupported, "unknownMessageType": .malformed,
            "wrongDirection": .malformed, "oversized": .malformed, "malformed": .malformed,
        ])

        struct Vectors: Decodable {
            struct Invalid: Decodable {
                let name, direction, hex, error: String
            }
            let invalid: [Invalid]
        }
        let fixture = Self.root.appendingPathComponent("Tests/RivetSessionTests/Fixtures/rvd1-vectors.json")
        let vectors = try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: fixture)).invalid
        #expect(Set(vectors.map(\.error)) == Set(answers.keys))
        try await withDaemon(try Home()) { daemon in
            var tried = 0
            for vector in vectors where vector.direction == "clientToServer" {
                let input = try Self.bytes(vector.hex)
                let fingerprint = daemon.fingerprint
                let port = daemon.port
                let reply = try await offPool { try Self.prefaceReply(to: input, port: port, pin: fingerprint) }
                let expected = try #require(answers[vector.error])
                #expect(reply == RVD1Message.reject(expected).encoded, "\(vector.name) (\(vector.error))")
                tried += 1
            }
            #expect(tried >= 10)
            // Not one refusal reached the gateway as a session.
            #expect(!daemon.log.contains("opened: device"))
        }
    }
}
