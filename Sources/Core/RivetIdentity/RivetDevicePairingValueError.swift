import CodedError

/// A value handed to the pairing library is outside what its type allows: a scope name, an
/// application ID, a device name, a server address, or an environment that names no state
/// directory.
///
/// Equality compares only the kind (`code`), never the message.
public struct RivetDevicePairingValueError: CodedError {
    public let code: Code
    /// What was wrong and what is allowed.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case invalidScope, invalidApplicationID, invalidDeviceName, invalidServerAddress, noStateDirectory
    }

    /// A scope name is not 1–64 characters of `a-z`, `0-9`, `-`, `_`, `.`.
    public static let invalidScope = RivetDevicePairingValueError(code: .invalidScope, message: "a scope name must be 1 to 64 characters of a-z, 0-9, '-', '_' or '.'")
    /// An application ID is empty, longer than 255 bytes of UTF-8, or holds a hidden character.
    public static let invalidApplicationID = RivetDevicePairingValueError(code: .invalidApplicationID, message: "an application ID must be 1 to 255 bytes of UTF-8 without control, format (BiDi, zero-width) or separator characters")
    /// A device name is empty, longer than 128 bytes of UTF-8, or holds a hidden character.
    public static let invalidDeviceName = RivetDevicePairingValueError(code: .invalidDeviceName, message: "a device name must be 1 to 128 bytes of UTF-8 without control, format (BiDi, zero-width) or separator characters")
    /// A server address is empty, longer than 255 bytes of UTF-8, or holds a control character.
    public static let invalidServerAddress = RivetDevicePairingValueError(code: .invalidServerAddress, message: "a server address must be 1 to 255 bytes of UTF-8 without control characters")
    /// Neither `XDG_STATE_HOME` (absolute) nor `HOME` (absolute) is set, so there is no place for state files.
    public static let noStateDirectory = RivetDevicePairingValueError(code: .noStateDirectory, message: "no state directory: set XDG_STATE_HOME or HOME to an absolute path")

    /// The same kind with a message that names the offending value or setting.
    package func with(_ detail: String) -> RivetDevicePairingValueError {
        RivetDevicePairingValueError(code: code, message: "\(detail): \(message)")
    }
}
