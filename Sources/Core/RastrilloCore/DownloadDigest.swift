import ByteText

/// A digest a download must have before it may appear under its name (`--sha256 HEX`,
/// `--sha512 HEX`): the algorithm and the expected bytes. Computing it is the I/O layer's job.
public struct DownloadDigest: Sendable, Hashable {
    /// The hash functions a download can be checked with.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        case sha256, sha512

        /// The digest's length in bytes: 32 or 64.
        public var byteCount: Int { self == .sha256 ? 32 : 64 }
    }

    /// The hash function.
    public let algorithm: Algorithm
    /// The expected digest, ``Algorithm/byteCount`` bytes.
    public let expected: [UInt8]

    /// The digest written as `hex`: exactly twice ``Algorithm/byteCount`` hexadecimal digits,
    /// upper or lower case, nothing else (no space, no `sha256:` prefix, no file name).
    /// - Throws: `DownloadDigestError` naming what is wrong.
    public init(_ algorithm: Algorithm, hex: String) throws(DownloadDigestError) {
        let digits = algorithm.byteCount * 2
        guard hex.utf8.count == digits else {
            throw DownloadDigestError(
                "--\(algorithm.rawValue) takes exactly \(digits) hexadecimal digits; '\(hex.prefix(140))' has \(hex.utf8.count) characters")
        }
        guard let bytes = Hex.decode(hex, byteCount: algorithm.byteCount) else {
            throw DownloadDigestError("--\(algorithm.rawValue) takes hexadecimal digits only (0-9, a-f); '\(hex)' holds another character")
        }
        self.algorithm = algorithm
        self.expected = bytes
    }

    /// The expected digest in lowercase hexadecimal.
    public var expectedHex: String { Hex.encode(expected) }
}

/// A `--sha256`/`--sha512` value that is not a digest of that algorithm.
public struct DownloadDigestError: Error, Sendable, Hashable {
    /// What is wrong, naming the option.
    public let message: String

    init(_ message: String) { self.message = message }
}
