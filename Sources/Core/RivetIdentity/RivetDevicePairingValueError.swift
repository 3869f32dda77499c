/// A value handed to the pairing library is outside what its type allows: a scope name, an
/// application ID, a device name, a server address, or an environment that names no state
/// directory.
///
/// Equality compares only the kind (`code`), never the message.
public struct RivetDevicePairingValueError: Error, Equatable, Sendable, CustomStringConvertible {
    private enum Code: Equatable, Sendable {
        case invalidScope
        case invalidApplicationID
        case invalidDeviceName
        case invalidServerAddress
        case noStateDirectory
    }

    private let code: Code
    /// What was wrong and what is allowed.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A scope name is not 1–64 characters of `a-z`, `0-9`, `-`, `_`, `.`.
    public static let invalidScope = RivetDevicePairingValueError(
        .invalidScope, "a scope name must be 1 to 64 characters of a-z, 0-9, '-', '_' or '.'")
    /// An application ID is empty, longer than 255 bytes of UTF-8, or holds a hidden character.
    public static let invalidApplicationID = RivetDevicePairingValueError(
        .invalidApplicationID,
        "an application ID must be 1 to 255 bytes of UTF-8 without control, format (BiDi, zero-width) or separator characters")
    /// A device name is empty, longer than 128 bytes of UTF-8, or holds a hidden character.
    public static let invalidDeviceName = RivetDevicePairingValueError(
        .invalidDeviceName,
        "a device name must be 1 to 128 bytes of UTF-8 without control, format (BiDi, zero-width) or separator characters")
    /// A server address is empty, longer than 255 bytes of UTF-8, or holds a control character.
    public static let invalidServerAddress = RivetDevicePairingValueError(
        .invalidServerAddress, "a server address must be 1 to 255 bytes of UTF-8 without control characters")
    /// Neither `XDG_STATE_HOME` (absolute) nor `HOME` (absolute) is set, so there is no place for
    /// state files.
    public static let noStateDirectory = RivetDevicePairingValueError(
        .noStateDirectory,
        "no state directory: set XDG_STATE_HOME or HOME to an absolute path")

    /// The same kind with a message that names the offending value or setting.
    package func with(_ detail: String) -> RivetDevicePairingValueError {
        RivetDevicePairingValueError(code, "\(detail): \(message)")
    }

    /// Compares the kind only, never the message.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// The message.
    public var description: String { message }
}
