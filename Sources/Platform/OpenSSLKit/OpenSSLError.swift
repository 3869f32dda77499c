internal import COpenSSL
import CodedError

/// A failure inside OpenSSL while handling keys, certificates, PEM text or random bytes.
///
/// Equality compares only the kind of failure (`code`), never the message, so callers can write
/// `error == .unsupportedKeyType`.
public struct OpenSSLError: CodedError {
    public let code: Code
    /// What failed and why, including OpenSSL's own error text when it gave any.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case invalidPEM, invalidDER, unsupportedKeyType, keyMismatch, operationFailed
    }

    /// The text is not PEM, or its PEM block does not decode to the expected object.
    public static let invalidPEM = OpenSSLError(code: .invalidPEM, message: "invalid PEM")
    /// The bytes are not valid DER for the expected object.
    public static let invalidDER = OpenSSLError(code: .invalidDER, message: "invalid DER")
    /// The key decodes, but it is not an ECDSA key on the NIST P-256 curve.
    public static let unsupportedKeyType = OpenSSLError(code: .unsupportedKeyType, message: "unsupported key type")
    /// A certificate's public key does not belong to the private key it was paired with.
    public static let keyMismatch = OpenSSLError(code: .keyMismatch, message: "certificate does not match key")
    /// An OpenSSL call failed (key generation, signing, encoding, random bytes, context setup).
    public static let operationFailed = OpenSSLError(code: .operationFailed, message: "OpenSSL operation failed")

    /// The same kind of error with a message naming what failed; OpenSSL's queued error text is
    /// appended and the thread's error queue is cleared.
    func with(_ what: String) -> OpenSSLError {
        let queue = drainOpenSSLErrors()
        return OpenSSLError(code: code, message: queue.isEmpty ? what : "\(what): \(queue)")
    }
}

/// Reads every entry of this thread's OpenSSL error queue into one line, leaving it empty so
/// errors never leak into a later operation.
func drainOpenSSLErrors() -> String {
    drainOpenSSLErrorCodes().text
}

/// Reads and clears this thread's OpenSSL error queue, returning the packed codes and their text.
func drainOpenSSLErrorCodes() -> (codes: [UInt], text: String) {
    var codes: [UInt] = []
    var parts: [String] = []
    var buffer = [CChar](repeating: 0, count: 256)
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        codes.append(code)
        ERR_error_string_n(code, &buffer, buffer.count)
        parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return (codes, parts.joined(separator: "; "))
}
