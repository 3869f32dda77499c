import CodedError
import Glibc

/// Why a text could not be encoded as a QR code.
///
/// Equality compares the kind of error only (`error == .tooLong`), never the message.
public struct QRCodeError: CodedError {
    public let code: Code
    /// A human-readable account of what failed, with the sizes or the `errno` behind it.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case emptyText, tooLong, encoderFailed
    }

    /// The text is empty: a QR code of nothing is never what a caller means.
    public static let emptyText = QRCodeError(code: .emptyText, message: "the text to encode as a QR code is empty")
    /// The text's UTF-8 bytes do not fit the largest QR code, version 40 at error correction level M in byte mode: at most ``QRCode/maximumByteCount`` (2331) bytes.
    public static let tooLong = QRCodeError(code: .tooLong, message: "the text is longer than a QR code holds: at most \(QRCode.maximumByteCount) bytes")
    /// libqrencode failed for another reason (out of memory, say); `message` gives its `errno`.
    public static let encoderFailed = QRCodeError(code: .encoderFailed, message: "libqrencode could not encode the text")

    /// ``tooLong`` for a text of `byteCount` bytes.
    static func tooLong(byteCount: Int) -> QRCodeError {
        QRCodeError(
            code: .tooLong,
            message: "the text is \(byteCount) bytes, longer than a QR code holds: at most \(QRCode.maximumByteCount) bytes "
                + "(version 40, error correction level M, byte mode)")
    }

    /// ``encoderFailed`` with libqrencode's `errno`.
    static func encoderFailed(errno number: Int32) -> QRCodeError {
        QRCodeError(
            code: .encoderFailed, message: "libqrencode could not encode the text: \(String(cString: strerror(number))) (errno \(number))")
    }
}
