internal import CQRencode
import Glibc

/// A QR code's modules: a square of dark and light cells, encoded by libqrencode.
///
/// The text is encoded as its UTF-8 bytes in byte mode (8-bit, so letter case and every byte are
/// kept as they are), at error correction level M (about 15 % of the symbol may be damaged),
/// in the smallest version (size) that holds it. The value owns a copy of the modules; nothing
/// of libqrencode outlives the initializer.
public struct QRCode: Sendable, Equatable {
    /// The most UTF-8 bytes a QR code holds at level M in byte mode (version 40-M).
    public static let maximumByteCount = 2331

    /// Modules per side, without the quiet zone: 21 for version 1, up to 177 for version 40.
    public let size: Int
    /// Row after row, `size` × `size`; true for a dark module.
    private let modules: [Bool]

    /// Encodes `text`. Throws ``QRCodeError/emptyText`` for an empty text,
    /// ``QRCodeError/tooLong`` for one of more than ``maximumByteCount`` UTF-8 bytes, and
    /// ``QRCodeError/encoderFailed`` when libqrencode fails otherwise (out of memory).
    public init(encoding text: String) throws(QRCodeError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw .emptyText }
        guard bytes.count <= Int(Int32.max) else { throw .tooLong(byteCount: bytes.count) }
        // Version 0 asks for the smallest version that fits; QRcode_encodeData encodes every
        // byte in 8-bit mode (QRcode_encodeString would split digits and capitals into other modes).
        errno = 0
        guard let symbol = QRcode_encodeData(Int32(bytes.count), bytes, 0, QR_ECLEVEL_M) else {
            let number = errno
            throw number == ERANGE ? .tooLong(byteCount: bytes.count) : .encoderFailed(errno: number)
        }
        defer { QRcode_free(symbol) }
        let width = Int(symbol.pointee.width)
        // Bit 0 of each byte is the module's colour; the other bits say what libqrencode put there.
        modules = UnsafeBufferPointer(start: symbol.pointee.data, count: width * width).map { $0 & 1 == 1 }
        size = width
    }

    /// Whether the module at `row` and `column` (each in `0..<size`, from the top left) is dark.
    /// Traps outside the symbol.
    public func isDark(row: Int, column: Int) -> Bool {
        precondition((0..<size).contains(row) && (0..<size).contains(column), "module (\(row), \(column)) outside a \(size)-module QR code")
        return modules[row * size + column]
    }
}
