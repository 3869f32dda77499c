import ByteText
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
        do {
            return try JSONValueEncoder(foundationTypes: .asJSONEncoder).encode(value).bytes()
        } catch {
            throw .encodingFailed(what(), error)
        }
    }

    /// Decodes JSON bytes as `type`.
    /// - Throws: ``RivetDeviceError/decodingFailed`` naming the type.
    public static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8], describing what: @autoclosure () -> String = "payload") throws(RivetDeviceError) -> Value {
        do {
            return try JSONValueDecoder().decode(type, from: JSONParser.parse(bytes))
        } catch {
            throw .decodingFailed(what(), error)
        }
    }
}

/// A request payload that did not decode; reported as `rivet.invalid-request` in the schema's
/// terms (the route and the JSON field, as the schema names them), never a Swift type's name.
struct RequestDecodingFailure: Error {
    /// What the payload should have been: `the arguments of current-score`.
    let what: String
    /// What is wrong with it: `` `game-id` is missing ``.
    let detail: String

    /// Decodes `payload` as `type`, or throws a failure describing `what` went wrong.
    static func decode<Value: Decodable>(_ type: Value.Type, from payload: [UInt8], as what: String) throws -> Value {
        let json: JSONValue
        do {
            json = try JSONParser.parse(payload)
        } catch {
            throw RequestDecodingFailure(what: what, detail: "it is not valid JSON")
        }
        do {
            return try JSONValueDecoder().decode(type, from: json)
        } catch let error as DecodingError {
            throw RequestDecodingFailure(what: what, detail: Self.detail(of: error))
        } catch {
            throw RequestDecodingFailure(what: what, detail: "it is not valid JSON")
        }
    }

    /// The JSON path and the problem, from the decoder's error.
    static func detail(of error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing"
        case .valueNotFound(_, let context):
            return context.codingPath.isEmpty ? "it is null" : "\(path(context.codingPath)) is null"
        case .typeMismatch(let type, let context):
            let expected = kind(type)
            return context.codingPath.isEmpty ? "it is not \(expected)" : "\(path(context.codingPath)) is not \(expected)"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "it has a value the schema does not allow" : "\(path(context.codingPath)) has a value the schema does not allow"
        @unknown default:
            return "it does not match the schema"
        }
    }

    /// `` `game-id` ``, `` `players[2].name` ``: the JSON keys (the schema's field names).
    private static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + printable(key.stringValue)
            }
        }
        return "`\(text)`"
    }

    /// The JSON kind the decoder wanted.
    private static func kind(_ type: Any.Type) -> String {
        if type == String.self { return "a string" }
        if type == Bool.self { return "true or false" }
        if type is any BinaryInteger.Type { return "an integer" }
        if type is any BinaryFloatingPoint.Type { return "a number" }
        if type == [Any].self { return "an array" }
        if type == [String: Any].self { return "an object" }
        return "what the schema declares"
    }
}
