import Foundation
import OpenSSLKit
import RivetPairing
import RivetSession
import Testing

/// The committed golden vectors (`Fixtures/rvd1-vectors.json`).
struct RVD1Vectors: Decodable {
    struct Valid: Decodable {
        let name: String
        let direction: String
        /// The RVD version that defines the message's type (1, or 2 for pairing by link).
        let version: Int
        let fields: [String: FieldValue]
        let hex: String
    }

    /// A whole client preface (magic and messages) a server's reader accepts.
    struct Preface: Decodable {
        let name: String
        /// The valid vectors whose messages follow the magic, in order.
        let messages: [String]
        let hex: String
    }

    struct Invalid: Decodable {
        let name: String
        let direction: String
        /// The RVD version the client's reader assumes, for server-to-client input only (a
        /// client's input names its version with its magic).
        let version: Int?
        let hex: String
        let error: String
        let consumedBeforeError: Int
    }

    enum FieldValue: Decodable {
        case text(String), number(Int), none

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .none
            } else if let number = try? container.decode(Int.self) {
                self = .number(number)
            } else {
                self = .text(try container.decode(String.self))
            }
        }

        var text: String? { if case .text(let value) = self { value } else { nil } }
        var number: Int? { if case .number(let value) = self { value } else { nil } }
    }

    let magic: String
    let linkMagic: String
    let valid: [Valid]
    let prefaces: [Preface]
    let invalid: [Invalid]

    static func load() throws -> RVD1Vectors {
        let url = try #require(Bundle.module.url(forResource: "rvd1-vectors", withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode(RVD1Vectors.self, from: Data(contentsOf: url))
    }
}

func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var iterator = hex.utf8.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
        out.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)!)
    }
    return out
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

func direction(_ name: String) -> RVD1Direction {
    name == "clientToServer" ? .clientToServer : .serverToClient
}

/// Reads every message in `input` (which for client-to-server input must start with the magic),
/// feeding `chunk` bytes at a time; returns the messages and how many bytes were consumed.
func readAll(_ input: [UInt8], direction: RVD1Direction, chunk: Int = .max) throws(RVD1Error) -> (messages: [RVD1Message], consumed: Int) {
    var reader = RVD1Reader(reading: direction)
    var messages: [RVD1Message] = []
    var offset = 0
    while offset < input.count {
        let end = min(input.count, offset + min(chunk, reader.bytesNeeded))
        let (consumed, message) = try reader.consume(input[offset..<end])
        offset += consumed
        if let message { messages.append(message) }
    }
    return (messages, offset)
}

/// Feeds `input` one byte at a time until the reader throws; returns the error and how many
/// bytes had been fed, or nil when it never throws.
func firstError(_ input: [UInt8], direction: RVD1Direction) -> (error: RVD1Error, fed: Int)? {
    var reader = RVD1Reader(reading: direction)
    for (index, byte) in input.enumerated() {
        do throws(RVD1Error) {
            _ = try reader.consume([byte])
        } catch {
            return (error, index + 1)
        }
    }
    return nil
}

func errorKind(_ name: String) -> RVD1Error? {
    switch name {
    case "badMagic": .badMagic
    case "unsupportedVersion": .unsupportedVersion
    case "unknownMessageType": .unknownMessageType
    case "wrongDirection": .wrongDirection
    case "oversized": .oversized
    case "malformed": .malformed
    default: nil
    }
}

/// Deterministic bytes for tests: the counting sequence the vectors use.
func counting(from start: UInt8, _ count: Int) -> [UInt8] {
    (0..<count).map { start &+ UInt8(truncatingIfNeeded: $0) }
}

let testApplication = try! RivetApplicationID("org.example.rivet")
let testDeviceID = DeviceID(bytes: counting(from: 0, 16))!
let testCredential = PairingCredential(bytes: counting(from: 0x20, 32))!
let testDiscoverySecret = RivetDiscoverySecret(bytes: counting(from: 0x60, 32))!
let testNonceC = Nonce(bytes: counting(from: 0x20, 32))!
let testNonceS = Nonce(bytes: counting(from: 0x40, 32))!

/// A randomness source that returns the given byte strings in order.
final class ScriptedRandomness: RivetPairingRandomness, @unchecked Sendable {
    // @unchecked Sendable: `queue` is only touched under `lock`.
    private let lock = NSLock()
    private var queue: [[UInt8]]
    init(_ queue: [[UInt8]]) { self.queue = queue }
    func bytes(_ count: Int) throws -> [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        guard !queue.isEmpty else { throw RivetPairingRandomnessError.shortRead }
        let next = queue.removeFirst()
        guard next.count == count else { throw RivetPairingRandomnessError.shortRead }
        return next
    }
}
