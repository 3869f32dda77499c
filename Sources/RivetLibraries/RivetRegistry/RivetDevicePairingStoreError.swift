import CodedError
import RivetPairing
import SQLiteKit
import SystemKit

/// Why the pairing registry could not be opened, read or changed. Messages name the registry
/// file and the device ID involved; they never contain a credential or a verifier.
///
/// Equality compares only the kind (`code`), never the message.
public struct RivetDevicePairingStoreError: CodedError {
    public let code: Code
    /// What failed and why.
    public let message: String
    /// The SQLite error underneath a `.database` (or `.schemaTooNew`) error.
    public internal(set) var sqliteError: SQLiteError?

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case invalidPath, notFound, symlink, notRegularFile, insecurePermissions, notARegistry, schemaTooNew, damaged, unknownDevice, deviceExists, corruptRecord, database, fileSystem
    }

    /// The path is empty, holds a NUL byte, or the environment names no state directory.
    public static let invalidPath = Self(code: .invalidPath, message: "the pairing registry path is not usable")
    /// No registry exists at the path, and the store was not asked to create one.
    public static let notFound = Self(code: .notFound, message: "there is no pairing registry at this path")
    /// The registry path (or its `-wal`/`-shm` companion) is a symbolic link.
    public static let symlink = Self(code: .symlink, message: "the pairing registry path is a symbolic link")
    /// The registry path is a directory or special file.
    public static let notRegularFile = Self(code: .notRegularFile, message: "the pairing registry path is not a regular file")
    /// Group or others have a permission bit on the registry (or its `-wal`/`-shm`), or another user owns it. Refused: a registry others can read leaks device metadata and verifiers, and one others can write lets them add devices.
    public static let insecurePermissions = Self(code: .insecurePermissions, message: "the pairing registry is accessible to other users")
    /// The file is an SQLite database (or something else) that is not a Rivet pairing registry.
    public static let notARegistry = Self(code: .notARegistry, message: "the file is not a Rivet pairing registry")
    /// The registry was written by a newer program (a higher schema version); nothing was changed.
    public static let schemaTooNew = Self(code: .schemaTooNew, message: "the pairing registry was written by a newer version of Rivet")
    /// The file fails SQLite's `quick_check` (a damaged page, a broken index); nothing was changed.
    public static let damaged = Self(code: .damaged, message: "the pairing registry file is damaged")
    /// No paired device has this ID.
    public static let unknownDevice = Self(code: .unknownDevice, message: "no paired device has this ID")
    /// A device with this ID is already paired (insert of a new device).
    public static let deviceExists = Self(code: .deviceExists, message: "a device with this ID is already paired")
    /// A stored record breaks the registry's rules (edited by hand or damaged).
    public static let corruptRecord = Self(code: .corruptRecord, message: "a pairing registry record is damaged")
    /// SQLite failed (busy past the timeout, disk full, I/O error, ...); `sqliteError` says how.
    public static let database = Self(code: .database, message: "the pairing registry database failed")
    /// Creating or inspecting the registry's directory or file failed.
    public static let fileSystem = Self(code: .fileSystem, message: "a file operation on the pairing registry failed")

    func with(_ message: String, sqliteError: SQLiteError? = nil) -> Self {
        Self(code: code, message: message, sqliteError: sqliteError ?? self.sqliteError)
    }

    /// True when SQLite gave up waiting for another process's lock (the busy timeout passed).
    public var isBusy: Bool { sqliteError?.isBusy == true }
}

extension RivetDevicePairingStoreError {
    init(_ problem: PrivateFileError, path: String) {
        let message = problem.explanation(for: path, what: "pairing registry")
        switch problem {
        case .notFound, .notRegularFile, .tooLarge: self.init(code: .notRegularFile, message: message)
        case .symlink: self.init(code: .symlink, message: message)
        case .wrongOwner, .insecureMode: self.init(code: .insecurePermissions, message: message)
        case .system: self.init(code: .fileSystem, message: message)
        }
    }
}
