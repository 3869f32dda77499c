import Foundation
import RivetWire

/// The name of an RPC, event or state key on the wire: non-empty, at most 255 bytes of
/// `A-Z a-z 0-9 . _ - : /`. Validity is checked where a route is used (registration, send).
public struct RivetRoute: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The name as carried in RVT1 frames.
    public let name: String

    /// Wraps a name without validating it.
    public init(_ name: String) { self.name = name }

    /// Wraps a string literal without validating it.
    public init(stringLiteral value: String) { self.name = value }

    /// The name.
    public var description: String { name }

    /// Checks the RVT1 name rules.
    /// - Throws: ``RivetDeviceError/invalidRoute`` naming the broken rule.
    public func validate() throws(RivetDeviceError) {
        if name.isEmpty { throw .invalidRoute(name, "it is empty") }
        do {
            try RVT1.validateName(name)
        } catch {
            throw .invalidRoute(name, error.message)
        }
    }
}

/// A request type tied to its response type: the route it travels on, the JSON-encodable
/// arguments (the request value itself) and the type its answer decodes as.
///
/// The generator emits one conforming type per exported RPC; applications may also conform
/// their own types for messages that have no backend RPC.
public protocol RivetDeviceRequest: Codable, Sendable {
    /// The type the peer's result payload decodes as.
    associatedtype Response: Codable & Sendable

    /// The route (RPC name) this request is sent on and its handler is registered under.
    static var route: RivetRoute { get }
}

/// A typed event name: the payload type travels with the name, so senders and receivers cannot
/// disagree about it.
public struct RivetEventKey<Payload: Codable & Sendable>: Hashable, Sendable {
    /// The event name on the wire.
    public let route: RivetRoute

    /// Creates a key for event `name`.
    public init(_ name: String) { self.route = RivetRoute(name) }
}

/// A typed state key: the value type travels with the key.
public struct RivetStateKey<Value: Codable & Sendable>: Hashable, Sendable {
    /// The state key on the wire.
    public let route: RivetRoute

    /// Creates a key for state `name`.
    public init(_ name: String) { self.route = RivetRoute(name) }
}

/// The payload of a result that carries no value (a Void RPC, a state write): the JSON
/// object `{}`.
public struct RivetDeviceUnit: Codable, Hashable, Sendable {
    /// The unit value.
    public init() {}
}

/// The JSON coding every RivetDevice payload uses (`docs/protocol.md`, "Payload encoding"):
/// keys sorted, slashes unescaped, `Data` as base64, integers exact up to 64 bits.
public enum RivetDeviceJSON {
    /// Encodes `value` as JSON bytes.
    /// - Throws: ``RivetDeviceError/encodingFailed`` (for example for a non-finite Double).
    public static func encode<Value: Encodable>(_ value: Value, describing what: @autoclosure () -> String = "value") throws(RivetDeviceError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw .encodingFailed(what(), error)
        }
    }

    /// Decodes JSON bytes as `type`.
    /// - Throws: ``RivetDeviceError/decodingFailed`` naming the type.
    public static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8], describing what: @autoclosure () -> String = "payload") throws(RivetDeviceError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw .decodingFailed(what(), error)
        }
    }
}
