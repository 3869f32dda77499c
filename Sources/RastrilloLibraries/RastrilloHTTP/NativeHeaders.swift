import CurlKit
import RastrilloCore

/// One header field, name case preserved: a `CurlHeader` whose refusal is a
/// `NativeClientError`.
public struct NativeHeaderField: Sendable, Hashable, CustomStringConvertible {
    /// The field as libcurl sends it or received it.
    let field: CurlHeader

    /// The field name.
    public var name: String { field.name }
    /// The field value.
    public var value: String { field.value }

    /// A request header: the name is an RFC 9110 token of 1 to 256 characters, the value at most
    /// 65 536 bytes with no control character but horizontal tab (no CR, LF or NUL: no header
    /// injection). The rules are `CurlHeader`'s, the one place that checks them.
    /// - Throws: `NativeClientError.invalidRequest` naming the field, never quoting its value.
    public init(name: String, value: String) throws(NativeClientError) {
        do {
            field = try CurlHeader(name: name, value: value)
        } catch {
            throw NativeClientError.invalidRequest.with(error.message)
        }
    }

    /// A response header as received.
    init(received field: CurlHeader) {
        self.field = field
    }

    /// `name: value`.
    public var description: String { field.description }
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
