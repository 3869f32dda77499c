import ByteText

/// A JSON value of the control protocol (`docs/protocol.md (control part)`): requests and responses
/// are one JSON object per line. ByteText's ``JSONValue``, read and written by its parser and
/// writer.
public typealias RivetControlJSON = JSONValue

extension JSONValue {
    /// The deepest nesting of arrays and objects a control line may have.
    public static let controlMaximumNesting = 16

    /// Parses one control line (without its newline).
    /// - Throws: ``RivetControlError/malformedRequest`` when it is not JSON, nests deeper than
    ///   ``controlMaximumNesting``, or has a top level other than an object.
    public init(parsingLine bytes: [UInt8]) throws(RivetControlError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes, maximumNesting: Self.controlMaximumNesting)
        } catch {
            if case .tooDeep = error.reason {
                throw RivetControlError.malformedRequest.with(
                    "the line nests arrays and objects deeper than \(Self.controlMaximumNesting) levels")
            }
            throw RivetControlError.malformedRequest.with("the line is not one JSON value")
        }
        guard case .object = value else {
            throw RivetControlError.malformedRequest.with("the line is not a JSON object")
        }
        self = value
    }

    /// The value as one line of JSON (keys sorted, `/` not escaped), without a newline.
    public var line: String {
        // A control value nests as deep as the line it came from or the shapes that build it.
        guard let bytes = try? bytes() else { return "null" }
        return String(decoding: bytes, as: UTF8.self)
    }
}
