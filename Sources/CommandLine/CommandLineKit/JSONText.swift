import ByteText

/// Encodes a value as compact JSON text: ByteText's ``JSONValueEncoder`` (Foundation's `Data`,
/// `Date`, `URL` and `Decimal` refused) written by its ``JSONWriter``.
enum JSONText {
    /// Arrays and objects may nest at most `maximumDepth - 1` levels deep (as in Foundation).
    static let maximumDepth = 512

    /// The UTF-8 bytes of `value` as JSON: object keys sorted by their UTF-8 bytes, `/` not
    /// escaped, non-ASCII written as is.
    /// - Throws: `EncodingError.invalidValue` for a non-finite `Float` or `Double`, for a
    ///   top-level value that encodes nothing, or for containers nested too deep; any error the
    ///   value's own `encode(to:)` throws.
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let tree = try JSONValueEncoder().encode(value)
        do {
            return try tree.bytes(maximumNesting: maximumDepth - 1)
        } catch {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "Arrays and objects nest deeper than \(maximumDepth - 1) levels."))
        }
    }
}
