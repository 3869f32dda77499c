import RastrilloCore

/// One header field, name case preserved.
public struct NativeHeaderField: Sendable, Hashable, CustomStringConvertible {
    /// The field name.
    public let name: String
    /// The field value.
    public let value: String

    /// A request header: the name is an RFC 9110 token of 1 to 256 characters, the value at most
    /// 65 536 bytes with no control character but horizontal tab (no CR, LF or NUL: no header
    /// injection).
    /// - Throws: `NativeClientError.invalidRequest` naming the field, never quoting its value.
    public init(name: String, value: String) throws(NativeClientError) {
        guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(Self.isTokenByte) else {
            throw NativeClientError.invalidRequest.with(
                "invalid header name \(String(reflecting: name)): a name is 1 to 256 token characters (RFC 9110)")
        }
        guard value.utf8.count <= 65_536 else {
            throw NativeClientError.invalidRequest.with(
                "header \(name): the value is \(value.utf8.count) bytes, more than the 65536-byte limit")
        }
        guard !value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
            throw NativeClientError.invalidRequest.with("header \(name): the value holds a control character (CR, LF, NUL or another)")
        }
        self.name = name
        self.value = value
    }

    init(received name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `name: value`.
    public var description: String { "\(name): \(value)" }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

/// Response header fields in received order, looked up case-insensitively.
public struct NativeHeaders: Sendable, Hashable, RandomAccessCollection {
    /// Every field in received order.
    public let fields: [NativeHeaderField]

    /// Headers made of `fields`.
    public init(_ fields: [NativeHeaderField]) {
        self.fields = fields
    }

    /// The first index.
    public var startIndex: Int { fields.startIndex }
    /// One past the last index.
    public var endIndex: Int { fields.endIndex }
    /// The field at `position`.
    public subscript(position: Int) -> NativeHeaderField { fields[position] }

    /// The value of the first field named `name` (any case), or nil.
    public subscript(name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    /// The values of every field named `name` (any case), in received order.
    public func values(_ name: String) -> [String] {
        let wanted = name.lowercased()
        return fields.filter { $0.name.lowercased() == wanted }.map(\.value)
    }
}
