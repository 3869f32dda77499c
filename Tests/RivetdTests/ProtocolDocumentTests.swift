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

    /// Sends the magic `magic` and `first` over a connection pinned to `pin`; when the server
    /// answers with `PairServerNonce`, sends what `answer` makes of it (nothing when it returns
    /// nil); returns every message the server sent until it closed.
    static func exchange(
        magic: [UInt8], first: RVD1Message, port: UInt16, pin: SPKIFingerprint, answer: (Nonce) -> [UInt8]?
    ) throws -> [RVD1Message] {
        let connection = try TLSConnection(socket: try connectTCP(port: port), context: try TLSClientContext(verification: .pinned(pin)))
        defer { connection.close() }
        let end = ContinuousClock.now + .seconds(30)
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
            if case .pairServerNonce(let nonce) = message, let bytes = answer(nonce.nonce) {
                try connection.write(bytes, deadline: end)
            }
        }
    }

    /// A `PairLinkBegin` of a new device named `name` for `application`, with a fresh `Nc`.
    static func linkBegin(_ application: RivetApplicationID, name: String = "Linked Phone") throws -> RivetDevicePairLinkBegin {
        RivetDevicePairLinkBegin(
            applicationID: application, deviceName: try RivetDeviceName(name), existingDeviceID: nil,
            clientNonce: Nonce(bytes: try SecureRandom.bytes(32))!)
    }

    /// The proof of `token` for `begin` on the connection whose server nonce is `nonce`.
    static func proof(_ token: RivetPairingToken, _ begin: RivetDevicePairLinkBegin, _ nonce: Nonce, pin: SPKIFingerprint) -> [UInt8] {
        RVD1Message.pairLinkProof(
            RivetPairingLinkProof(
                token: token, applicationID: begin.applicationID, serverFingerprint: pin, clientNonce: begin.clientNonce,
                serverNonce: nonce)
        ).encoded
    }

    /// The text of `text` with its runs of whitespace made single spaces.
    static func flat(_ text: String) -> String { text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }

    @Test("control §5: the socat example's requests get rivetd's answers, byte for byte but the seconds left")
    func socatExample() async throws {
        let control = try Self.part("control")
        let start = try #require(control.range(of: "## 5. Example with socat"))
        let block = control[start.upperBound...].split(separator: "```", omittingEmptySubsequences: false)[1]
        let lines = block.split(separator: "\n").map(String.init)
        let command = try #require(lines.first { $0.contains("printf") })
        // The quoted words after printf's format are the request lines.
        let requests = command.split(separator: "'").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            .filter { $0.hasPrefix("{") }
        let answers = lines.filter { $0.hasPrefix("{") }
        #expect(requests == [#"{"op":"open"}"#, #"{"op":"pending"}"#])
        #expect(answers.count == requests.count)

        try await withDaemon(try Home()) { daemon in
            let path = daemon.home.socket
            let replies = try await offPool { try Self.controlLines(requests, socket: path) }
            #expect(replies.count == answers.count)
            for (reply, answer) in zip(replies, answers) {
                // The seconds left depend on when the answer was written: 290 … 300 here.
                let pattern = #/"seconds_left":(\d+)/#
                let left = try #require(reply.firstMatch(of: pattern).flatMap { Int($0.1) }, "\(reply)")
                #expect((290...300).contains(left), "\(reply)")
                #expect(reply.replacing(pattern, with: #""seconds_left":299"#) == answer)
            }
        }
    }

    /// Writes each of `requests` as a line to the control socket at `socket`, as `socat` does,
    /// and returns the response lines (one per request).
    static func controlLines(_ requests: [String], socket path: String) throws -> [String] {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(connected == 0, "connect to \(path): \(String(cString: strerror(errno)))")
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(requests.map { $0 + "\n" }.joined().utf8)
        try #require(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count(where: { $0 == UInt8(ascii: "\n") }) < requests.count {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test("RVD1 §2 and §4: out of order is malformed and a failure; another application is pairingFailed and none; a missed proof deadline is a failure; a typed code leaves a link attempt alive; a closed window keeps its failures")
    func pairingRulesOnTheWire() async throws {
        let rows = try Self.table(try Self.part("rvd1"), header: "| reason | name |")
        let malformed = try #require(rows.first { $0[0] == "3" })
        let failed = try #require(rows.first { $0[0] == "8" })
        #expect(malformed[2].contains("a well-formed message came out of order") && malformed[2].contains("counts as a failure"))
        #expect(!failed[2].contains("out of order"))
        #expect(failed[2].contains("a `PairBegin` or `PairLinkBegin` for an application this server does not serve (not a failure)"))
        let rules = Self.flat(try Self.part("rvd1"))
        #expect(rules.contains("closes the connection without a message, like the device leaving: the attempt ends and counts as a failure"))
        let link = Self.flat(try Self.part("link"))
        #expect(link.contains("Confirming with a typed code is refused (`pairing-refused`) and changes nothing: the attempt goes on"))
        #expect(link.contains("A `PairLinkBegin` for another application than the desktop's gets `Reject(pairingFailed)`; it starts no attempt and does not count as a failure."))
        let control = Self.flat(try Self.part("control"))
        #expect(control.contains("when closed, those the window that closed last counted"))

        try await withDaemon(try Home()) { daemon in
            let (port, pin) = (daemon.port, daemon.fingerprint)
            let opened = try await daemon.request(.open(link: RivetControlLinkRequest(host: nil)))
            let link = try RivetPairingLink(parsing: try #require(opened["link"]?.string))
            let token = link.token

            // Another application: pairingFailed, no attempt, no failure.
            let other = try Self.linkBegin(try RivetApplicationID("org.example.other"))
            let refused = try await offPool {
                try Self.exchange(magic: RVD1.linkMagic, first: .pairLinkBegin(other), port: port, pin: pin) { _ in nil }
            }
            #expect(refused == [.reject(.pairingFailed)])
            // By code too (checked before the link window's own refusal, windowClosed).
            let otherByCode = RVD1Message.pairBegin(
                RivetDevicePairBegin(
                    applicationID: other.applicationID, deviceName: other.deviceName, existingDeviceID: nil,
                    commitment: RivetDevicePairingCommitment(to: other.clientNonce)))
            let refusedByCode = try await offPool {
                try Self.exchange(magic: RVD1.magic, first: otherByCode, port: port, pin: pin) { _ in nil }
            }
            #expect(refusedByCode == [.reject(.pairingFailed)])
            var pending = try await daemon.request(.pending)
            #expect(pending["failures"]?.integer == 0 && pending["window"]?.string == "open" && pending["attempt"] == .null)

            // A PairReveal where the proof belongs: malformed, and the attempt's failure.
            let begin = try Self.linkBegin(link.applicationID)
            let reveal = RVD1Message.pairReveal(RivetDevicePairReveal(nonce: begin.clientNonce)).encoded
            let outOfOrder = try await offPool {
                try Self.exchange(magic: RVD1.linkMagic, first: .pairLinkBegin(begin), port: port, pin: pin) { _ in reveal }
            }
            #expect(outOfOrder.count == 2 && outOfOrder.last == .reject(.malformed), "\(outOfOrder)")
            try await eventually("the out-of-order attempt to count") { try await daemon.request(.pending)["failures"]?.integer == 1 }

            // No proof: the server closes after its 5 s without a message; a failure.
            let started = ContinuousClock.now
            let silent = try await offPool {
                try Self.exchange(magic: RVD1.linkMagic, first: .pairLinkBegin(begin), port: port, pin: pin) { _ in nil }
            }
            #expect(silent.count == 1, "\(silent)")
            if case .pairServerNonce = silent.first {} else { Issue.record("no PairServerNonce: \(silent)") }
            #expect(ContinuousClock.now - started >= .seconds(4), "closed before the proof's deadline")
            try await eventually("the missed deadline to count") { try await daemon.request(.pending)["failures"]?.integer == 2 }

            // The right proof; a typed code is refused and the attempt goes on; a plain confirm pairs.
            let device = Task {
                try await offPool {
                    try Self.exchange(magic: RVD1.linkMagic, first: .pairLinkBegin(begin), port: port, pin: pin) {
                        Self.proof(token, begin, $0, pin: pin)
                    }
                }
            }
            try await eventually("the attempt by link to be device-confirmed") {
                try await daemon.request(.pending)["attempt"]?["device_confirmed"] == .bool(true)
            }
            await #expect(throws: RivetControlError.pairingRefused) {
                try await daemon.request(.confirm(code: "123456", scopes: ["viewer"]))
            }
            pending = try await daemon.request(.pending)
            #expect(pending["attempt"]?["by_link"] == .bool(true) && pending["attempt"]?["desktop_confirmed"] == .bool(false))
            #expect(pending["failures"]?.integer == 2 && pending["window"]?.string == "open")
            let paired = try await daemon.request(.confirm(code: nil, scopes: ["viewer"]))
            #expect(paired["device"]?["name"]?.string == "Linked Phone")
            let messages = try await device.value
            if case .pairAccepted = messages.last {} else { Issue.record("no PairAccepted: \(messages)") }

            // Closed, the window still says how many attempts failed in it.
            pending = try await daemon.request(.pending)
            #expect(pending["window"]?.string == "closed" && pending["closed_because"]?.string == "paired")
            #expect(pending["failures"]?.integer == 2)
        }
    }

    @Test("RVD1 §2: reason 7 is never sent: the fifth failure gets its own reason, later attempts windowClosed, and pending says too-many-failures with 5")
    func fifthFailure() async throws {
        let rows = try Self.table(try Self.part("rvd1"), header: "| reason | name |")
        let seven = try #require(rows.first { $0[0] == "7" })
        #expect(Self.quoted(seven[1]) == RVD1RejectReason.tooManyFailures.name && seven[2].contains("rivetd never sends it"))
        let rvd1 = Self.flat(try Self.part("rvd1"))
        #expect(rvd1.contains("Reason 7 never travels on rivetd's wire."))
        #expect(rvd1.contains("every later `PairBegin` or `PairLinkBegin` gets `windowClosed`"))

        try await withDaemon(try Home()) { daemon in
            let (port, pin) = (daemon.port, daemon.fingerprint)
            let opened = try await daemon.request(.open(link: RivetControlLinkRequest(host: nil)))
            let link = try RivetPairingLink(parsing: try #require(opened["link"]?.string))
            var wrong = link.token.bytes
            wrong[0] ^= 1
            let wrongToken = try #require(RivetPairingToken(bytes: wrong))
            for attempt in 1...5 {
                let begin = try Self.linkBegin(link.applicationID, name: "Thief")
                let answers = try await offPool {
                    try Self.exchange(magic: RVD1.linkMagic, first: .pairLinkBegin(begin), port: port, pin: pin) {
                        Self.proof(wrongToken, begin, $0, pin: pin)
                    }
                }
                // The fifth failure is told its own reason, like the four before it.
                #expect(answers.count == 2 && answers.last == .reject(.linkRefused), "attempt \(attempt): \(answers)")
                let pending = try await daemon.request(.pending)
                #expect(pending["failures"]?.integer == Int64(attempt), "after attempt \(attempt)")
                #expect(pending["window"]?.string == (attempt < 5 ? "open" : "closed"))
            }
            let pending = try await daemon.request(.pending)
            #expect(pending["closed_because"]?.string == "too-many-failures")
            // Later attempts, with the right link or by code, meet a closed window.
            let begin = try Self.linkBegin(link.applicationID)
            let later = try await offPool {
                try Self.exchange(magic: RVD1.linkMagic, first: .pairLinkBegin(begin), port: port, pin: pin) { _ in nil }
            }
            #expect(later == [.reject(.windowClosed)])
            #expect(!daemon.log.contains("tooManyFailures"))
        }
    }

    /// How a client ends its side early.
    enum EarlyEnd: Sendable {
        /// TLS close_notify (then the socket's write side is shut).
        case closeNotify
        /// A TCP FIN with no close_notify before it.
        case fin
    }

    /// Sends `input` over a connection pinned to `pin`, ends the client's side `how`, and
    /// returns everything the server sends until it closes.
    static func earlyEndReply(_ input: [UInt8], _ how: EarlyEnd, port: UInt16, pin: SPKIFingerprint) throws -> [UInt8] {
        let fd = try connectTCP(port: port)
        let connection = try TLSConnection(socket: fd, context: try TLSClientContext(verification: .pinned(pin)))
        defer { connection.close() }
        let end = ContinuousClock.now + .seconds(20)
        try connection.handshake(deadline: end)
        if !input.isEmpty { try connection.write(input, deadline: end) }
        switch how {
        case .closeNotify: try connection.shutdown(deadline: end)
        case .fin: _ = Glibc.shutdown(fd, Int32(SHUT_WR))
        }
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

    @Test("RVD1 §6: an early end gets Reject(malformed) after close_notify inside a piece, and nothing between pieces or after a FIN")
    func earlyEnds() async throws {
        let rows = try Self.table(try Self.part("rvd1"), header: "| the client ends with |")
        #expect(rows.map { $0[0] } == ["`close_notify`", "`close_notify`", "a TCP FIN or reset without `close_notify`"])
        #expect(rows[0][1].hasPrefix("inside a piece") && rows[0][2].hasPrefix("`Reject(malformed)`"))
        #expect(rows[1][1].hasPrefix("between pieces") && rows[1][2].hasPrefix("nothing"))
        #expect(rows[2][1] == "anywhere" && rows[2][2].hasPrefix("nothing"))
        let resume = RVD1Message.resume(
            RVD1Resume(
                applicationID: try RivetApplicationID(testApplication), deviceID: DeviceID(bytes: [UInt8](repeating: 1, count: 16))!,
                credential: PairingCredential(bytes: [UInt8](repeating: 2, count: 32))!)
        ).encoded
        let insidePiece: [(String, [UInt8])] = [
            ("2 bytes of the magic", Array(RVD1.magic.prefix(2))), ("3 bytes of a header", RVD1.magic + resume.prefix(3)),
            ("part of a body", RVD1.magic + resume.prefix(15)),
        ]
        let betweenPieces: [(String, [UInt8])] = [("nothing", []), ("the magic alone", RVD1.magic)]
        try await withDaemon(try Home()) { daemon in
            let (port, pin) = (daemon.port, daemon.fingerprint)
            for (name, input) in insidePiece {
                let reply = try await offPool { try Self.earlyEndReply(input, .closeNotify, port: port, pin: pin) }
                #expect(reply == RVD1Message.reject(.malformed).encoded, "close_notify after \(name)")
                let cut = try await offPool { try Self.earlyEndReply(input, .fin, port: port, pin: pin) }
                #expect(cut == [], "FIN after \(name)")
            }
            for (name, input) in betweenPieces {
                for how in [EarlyEnd.closeNotify, .fin] {
                    let reply = try await offPool { try Self.earlyEndReply(input, how, port: port, pin: pin) }
                    #expect(reply == [], "\(how) after \(name)")
                }
            }
            // After a whole message, in a pairing attempt: the server closes; the attempt counts.
            let opened = try await daemon.request(.open(link: RivetControlLinkRequest(host: nil)))
            let link = try RivetPairingLink(parsing: try #require(opened["link"]?.string))
            for (index, how) in [EarlyEnd.closeNotify, .fin].enumerated() {
                let begin = try Self.linkBegin(link.applicationID)
                let reply = try await offPool { () throws -> [UInt8] in
                    let fd = try connectTCP(port: port)
                    let connection = try TLSConnection(socket: fd, context: try TLSClientContext(verification: .pinned(pin)))
                    defer { connection.close() }
                    let end = ContinuousClock.now + .seconds(20)
                    try connection.handshake(deadline: end)
                    try connection.write(RVD1.linkMagic + RVD1Message.pairLinkBegin(begin).encoded, deadline: end)
                    var reader = RVD1Reader(reading: .serverToClient)
                    var first: RVD1Message?
                    while first == nil {
                        let chunk = try connection.read(maxCount: reader.bytesNeeded, deadline: end)
                        if chunk.isEmpty { throw TestFailure("the server closed before PairServerNonce") }
                        first = try reader.consume(chunk).message
                    }
                    guard case .pairServerNonce = first else { throw TestFailure("no PairServerNonce: \(String(describing: first))") }
                    switch how {
                    case .closeNotify: try connection.shutdown(deadline: end)
                    case .fin: _ = Glibc.shutdown(fd, Int32(SHUT_WR))
                    }
                    var rest: [UInt8] = []
                    while true {
                        do throws(TLSError) {
                            let chunk = try connection.read(maxCount: 4096, deadline: end)
                            if chunk.isEmpty { return rest }
                            rest += chunk
                        } catch {
                            if error == .closed { return rest }
                            throw error
                        }
                    }
                }
                #expect(reply == [], "\(how) after PairLinkBegin")
                try await eventually("the left attempt to count") {
                    try await daemon.request(.pending)["failures"]?.integer == Int64(index + 1)
                }
            }
        }
    }
}
