/// What `rastrillo-download --continue` keeps beside `DEST.part` (in `DEST.part.meta`): the URL
/// the bytes came from and the validator If-Range sends back, so a resume appends only to the
/// same representation.
///
/// The file is text, written by the tool and read back as untrusted (someone may have edited
/// it): at most ``maximumSize`` bytes of UTF-8, one `key: value` line each, ending with a
/// newline:
///
///     rastrillo-download-part 1
///     url: https://example.com/big.iso
///     etag: "5f3c-1a2b"
///     length: 1073741824
///
/// `url` and exactly one of `etag` (a strong entity tag, RFC 9110 §8.8.3) and `last-modified`
/// (an HTTP-date, kept as sent) are required; `length` (the whole file's size, when the server
/// said it, in decimal without leading zeros) is optional. Every key at most once, no other key,
/// no control character.
public struct PartialDownloadRecord: Sendable, Hashable {
    /// The validator sent back in `If-Range`.
    public enum Validator: Sendable, Hashable {
        /// A strong entity tag, quotes included.
        case etag(String)
        /// A `Last-Modified` date the server's `Date` showed to be strong.
        case lastModified(String)

        /// The `If-Range` field value.
        public var headerValue: String {
            switch self {
            case .etag(let value), .lastModified(let value): value
            }
        }
    }

    /// The first line.
    public static let magic = "rastrillo-download-part 1"
    /// The largest record read: 16 KiB.
    public static let maximumSize = 16 << 10

    /// The URL (origin and target) the part was downloaded from.
    public let url: String
    /// The representation's validator.
    public let validator: Validator
    /// The whole file's length, when the server said it.
    public let length: Int64?

    /// A record; nil when a value could not be read back (a control character, an entity tag
    /// that is not strong, a negative length).
    public init?(url: String, validator: Validator, length: Int64?) {
        guard Self.isFieldText(url), !url.isEmpty, length.map({ $0 >= 0 }) ?? true else { return nil }
        switch validator {
        case .etag(let tag): guard Self.isStrongEntityTag(tag) else { return nil }
        case .lastModified(let date): guard Self.isFieldText(date), !date.isEmpty else { return nil }
        }
        self.url = url
        self.validator = validator
        self.length = length
    }

    /// The file's text.
    public var encoded: [UInt8] {
        var text = Self.magic + "\nurl: " + url + "\n"
        switch validator {
        case .etag(let tag): text += "etag: " + tag + "\n"
        case .lastModified(let date): text += "last-modified: " + date + "\n"
        }
        if let length { text += "length: \(length)\n" }
        return Array(text.utf8)
    }

    /// Reads a record.
    /// - Throws: `PartialDownloadRecordError` saying what is wrong (and on which line).
    public static func parse(_ bytes: [UInt8]) throws(PartialDownloadRecordError) -> PartialDownloadRecord {
        guard bytes.count <= maximumSize else { throw .init("it is over \(maximumSize) bytes") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .init("it is not UTF-8") }
        guard text.hasSuffix("\n") else { throw .init("it does not end with a newline") }
        let lines = text.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first == Substring(magic) else { throw .init("line 1 is not '\(magic)'") }
        var fields: [String: String] = [:]
        for (index, line) in lines.enumerated().dropFirst() {
            let number = index + 1
            guard let colon = line.firstIndex(of: ":") else { throw .init("line \(number) has no ':'") }
            let key = String(line[..<colon])
            let rest = line[line.index(after: colon)...]
            guard rest.hasPrefix(" ") else { throw .init("line \(number) has no space after ':'") }
            let value = String(rest.dropFirst())
            guard ["url", "etag", "last-modified", "length"].contains(key) else {
                throw .init("line \(number) has an unknown key '\(key.prefix(40))'")
            }
            guard fields[key] == nil else { throw .init("line \(number) repeats '\(key)'") }
            guard isFieldText(value), !value.isEmpty else { throw .init("line \(number) has an empty value or a control character") }
            fields[key] = value
        }
        guard let url = fields["url"] else { throw .init("it has no url") }
        let validator: Validator
        switch (fields["etag"], fields["last-modified"]) {
        case (let tag?, nil):
            guard isStrongEntityTag(tag) else { throw .init("its etag is not a strong entity tag") }
            validator = .etag(tag)
        case (nil, let date?): validator = .lastModified(date)
        case (nil, nil): throw .init("it has no validator (etag or last-modified)")
        case (_?, _?): throw .init("it has both an etag and a last-modified")
        }
        var length: Int64?
        if let text = fields["length"] {
            // Written as the tool writes it: no leading zero, so the record reads back as it is.
            guard let value = ContentRange.decimal(Substring(text)), text == "0" || !text.hasPrefix("0") else {
                throw .init("its length is not a number without leading zeros")
            }
            length = value
        }
        guard let record = PartialDownloadRecord(url: url, validator: validator, length: length) else {
            throw .init("it holds a value that cannot be sent")
        }
        return record
    }

    /// Text a header field may carry: no control character but tab, at most 8 KiB.
    static func isFieldText(_ text: String) -> Bool {
        text.utf8.count <= 8192 && !text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// `"..."` with only `etagc` inside (RFC 9110 §8.8.3): never `W/`, never an inner quote.
    public static func isStrongEntityTag(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count >= 2, bytes.count <= 8192, bytes.first == 0x22, bytes.last == 0x22 else { return false }
        return bytes.dropFirst().dropLast().allSatisfy { $0 == 0x21 || ($0 >= 0x23 && $0 != 0x7F) }
    }
}

/// Why a `DEST.part.meta` could not be read.
public struct PartialDownloadRecordError: Error, Sendable, Hashable {
    /// What is wrong with it.
    public let reason: String

    init(_ reason: String) { self.reason = reason }
}

/// A `Content-Range` field value of a 206 or 416 response (RFC 9110 §14.4), bytes only.
public struct ContentRange: Sendable, Hashable {
    /// The first and last byte sent, nil for `bytes */LENGTH` (a 416's).
    public let range: ClosedRange<Int64>?
    /// The whole representation's length, nil for `*` (unknown).
    public let completeLength: Int64?

    /// Reads `bytes FIRST-LAST/LENGTH`, `bytes FIRST-LAST/*` or `bytes */LENGTH`; nil for
    /// anything else, a range whose last byte comes before its first, or one that reaches past
    /// the length.
    public static func parse(_ value: String) -> ContentRange? {
        let text = Substring(value)
        guard text.hasPrefix("bytes "), let slash = text.lastIndex(of: "/") else { return nil }
        let spec = text[text.index(text.startIndex, offsetBy: 6)..<slash]
        let lengthText = text[text.index(after: slash)...]
        let completeLength = lengthText == "*" ? nil : decimal(lengthText)
        if lengthText != "*" && completeLength == nil { return nil }
        if spec == "*" {
            guard let completeLength else { return nil }
            return ContentRange(range: nil, completeLength: completeLength)
        }
        guard let dash = spec.firstIndex(of: "-"), let first = decimal(spec[..<dash]),
            let last = decimal(spec[spec.index(after: dash)...]), first <= last
        else { return nil }
        if let completeLength, last >= completeLength { return nil }
        return ContentRange(range: first...last, completeLength: completeLength)
    }

    /// One to 18 ASCII digits (so it fits an `Int64`), nothing else.
    static func decimal(_ text: Substring) -> Int64? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}

/// What a response to a download request means for the part kept so far: the pure decision of
/// `--continue`, from the status and headers alone.
public enum ResumeAnswer: Sendable, Hashable {
    /// 200: the whole body follows; a part kept so far is discarded (the file changed, or the
    /// server does not serve ranges).
    case whole
    /// 206 with the range asked for: the body is the rest of a file of `length` bytes.
    case append(length: Int64)
    /// 416 that says the file is exactly as long as the part: nothing more to fetch.
    case complete(length: Int64)
    /// A 206 or 416 that does not match the request (a lying `Content-Range`): the part is
    /// kept and the download fails.
    case mismatch(String)
    /// Any other status: the usual failure for it.
    case failure

    /// Decides for a request sent with `Range: bytes=resumeFrom-` (none when `resumeFrom` is 0).
    /// - Parameters:
    ///   - contentRange: the `Content-Range` field, if any.
    ///   - contentLength: the `Content-Length` field, read as a number, if any.
    ///   - recordedLength: the length the part's record kept from an earlier response, if any.
    public static func decide(
        status: Int, contentRange: String?, contentLength: Int64?, resumeFrom: Int64, recordedLength: Int64?
    ) -> ResumeAnswer {
        if status == 200 { return .whole }
        guard resumeFrom > 0, status == 206 || status == 416 else { return .failure }
        guard let field = contentRange, let parsed = ContentRange.parse(field) else {
            return .mismatch("the server answered \(status) without a valid Content-Range (\(contentRange.map { "'\($0.prefix(80))'" } ?? "none"))")
        }
        guard let length = parsed.completeLength else {
            return .mismatch("the server's Content-Range '\(field.prefix(80))' does not say the file's length")
        }
        if let recordedLength, recordedLength != length {
            return .mismatch(
                "the server's Content-Range '\(field.prefix(80))' says the file is \(length) bytes, but it was \(recordedLength) bytes with the same validator")
        }
        if status == 416 {
            guard parsed.range == nil, length == resumeFrom else {
                return .mismatch(
                    "the server answered 416 (range not satisfiable) for bytes \(resumeFrom)- with Content-Range '\(field.prefix(80))': the part does not match the file")
            }
            return .complete(length: length)
        }
        guard let range = parsed.range, range.lowerBound == resumeFrom, range.upperBound == length - 1 else {
            return .mismatch(
                "the server's Content-Range '\(field.prefix(80))' does not start at byte \(resumeFrom) and run to the end of the file")
        }
        if let contentLength, contentLength != length - resumeFrom {
            return .mismatch(
                "the server's Content-Length \(contentLength) does not match its Content-Range '\(field.prefix(80))'")
        }
        return .append(length: length)
    }
}
