import ByteText
import CodedError

/// An event ID a stream can resume from: a value the stream's parser could have committed from an
/// `id` field (no NUL, CR or LF: a line holds neither of the last two, and an `id` with a NUL is
/// ignored) that HTTP can also carry as `Last-Event-ID` (no other control character but tab, no
/// DEL, at most ``maxBytes`` bytes). The empty ID is valid: it sends no `Last-Event-ID` at all.
///
/// A resume file (``init(fileBytes:)``, ``fileBytes``) holds one such ID as one line: its UTF-8,
/// then one LF (which a hand-written file may leave out); an empty file, or one LF alone, holds
/// the empty ID.
public struct LastEventID: Sendable, Hashable {
    /// The ID's text.
    public let value: String

    /// The most bytes an ID may have: 65 536, what the tools send as one header field at most.
    public static let maxBytes = 65_536

    /// The empty ID: no `Last-Event-ID`.
    public static let empty = LastEventID(checked: "")

    private init(checked value: String) { self.value = value }

    /// Validates `text` as an ID.
    /// - Throws: ``LastEventIDError`` (`.tooLong`, `.nul`, `.lineBreak`, `.controlCharacter`).
    public init(_ text: String) throws(LastEventIDError) {
        var text = text
        if let fault = text.withUTF8({ Self.fault(in: $0) }) { throw fault }
        value = text
    }

    /// Reads the bytes of a resume file: at most ``maxBytes`` bytes of UTF-8, then at most one LF.
    /// - Throws: ``LastEventIDError``: `.tooLong`, `.moreThanOneLine` (an LF before the last
    ///   byte), `.notUTF8`, or what ``init(_:)`` throws.
    public init(fileBytes: [UInt8]) throws(LastEventIDError) {
        var line = fileBytes[...]
        if line.last == 0x0A { line = line.dropLast() }
        if line.count > Self.maxBytes { throw .tooLong(line.count) }
        if let newline = line.firstIndex(of: 0x0A) { throw .moreThanOneLine(at: newline) }
        guard let text = String(validating: line, as: UTF8.self) else { throw .notUTF8(at: Self.firstInvalidUTF8(line)) }
        try self.init(text)
    }

    /// What a resume file holding this ID contains: its UTF-8 and one LF.
    public var fileBytes: [UInt8] { Array(value.utf8) + [0x0A] }

    /// The first rule the ID's bytes break (the length first, then the first byte that breaks
    /// one), or nil.
    static func fault(in bytes: UnsafeBufferPointer<UInt8>) -> LastEventIDError? {
        if bytes.count > maxBytes { return .tooLong(bytes.count) }
        for (offset, byte) in bytes.enumerated() where (byte < 0x20 && byte != 0x09) || byte == 0x7F {
            switch byte {
            case 0x00: return .nul(at: offset)
            case 0x0A, 0x0D: return .lineBreak(byte, at: offset)
            default: return .controlCharacter(byte, at: offset)
            }
        }
        return nil
    }

    /// The offset of the first byte of `bytes` that does not start or continue valid UTF-8.
    private static func firstInvalidUTF8(_ bytes: ArraySlice<UInt8>) -> Int {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var valid = 0
        while case .scalarValue(let scalar) = decoder.decode(&iterator) { valid += UTF8.width(scalar) }
        return valid
    }
}

/// Why text is not an event ID a stream can resume from (``LastEventID``). The message says
/// what is wrong and where, without naming where the text came from: a caller adds that
/// (`--resume-file FILE: …`).
public struct LastEventIDError: IdentifiedCodedError, Hashable {
    public let code: Code
    /// What is wrong, and at which byte.
    public let message: String

    /// Over ``LastEventID/maxBytes`` bytes.
    static func tooLong(_ count: Int) -> LastEventIDError {
        LastEventIDError(code: .tooLong, message: "the ID is \(count) bytes, over the bound of \(LastEventID.maxBytes)")
    }

    /// A NUL byte, which the stream's parser never takes into an ID.
    static func nul(at offset: Int) -> LastEventIDError {
        LastEventIDError(code: .nul, message: "the ID holds a NUL byte (at byte \(offset))")
    }

    /// A CR or LF, which no line of a stream holds.
    static func lineBreak(_ byte: UInt8, at offset: Int) -> LastEventIDError {
        LastEventIDError(code: .lineBreak, message: "the ID holds a\(byte == 0x0D ? " CR" : "n LF") (at byte \(offset))")
    }

    /// Another control character or DEL, which HTTP cannot carry in `Last-Event-ID`.
    static func controlCharacter(_ byte: UInt8, at offset: Int) -> LastEventIDError {
        let hex = String(decoding: [Hex.digit(byte >> 4, uppercase: true), Hex.digit(byte & 0xF, uppercase: true)], as: UTF8.self)
        return LastEventIDError(
            code: .controlCharacter,
            message: "the ID holds the control character 0x\(hex) (at byte \(offset)), "
                + "which Last-Event-ID cannot carry")
    }

    /// An LF before the end of a resume file.
    static func moreThanOneLine(at offset: Int) -> LastEventIDError {
        LastEventIDError(code: .moreThanOneLine, message: "more than one line (an LF at byte \(offset)); it holds one ID")
    }

    /// Bytes that are not UTF-8.
    static func notUTF8(at offset: Int) -> LastEventIDError {
        LastEventIDError(code: .notUTF8, message: "the ID is not UTF-8 (at byte \(offset))")
    }

    /// The kinds of fault, what equality compares.
    public enum Code: String, Sendable {
        case tooLong = "last-event-id.too-long"
        case nul = "last-event-id.nul"
        case lineBreak = "last-event-id.line-break"
        case controlCharacter = "last-event-id.control-character"
        case moreThanOneLine = "last-event-id.more-than-one-line"
        case notUTF8 = "last-event-id.not-utf8"
    }
}
