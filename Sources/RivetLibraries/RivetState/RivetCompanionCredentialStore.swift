import ByteText
import CodedError
import Foundation
import OpenSSLKit
import RivetPairing
import SystemKit

/// The companion's credential file: JSON in a file of mode 0600 (parent directories created
/// 0700), replaced atomically (temporary file, `fsync`, `rename`, directory `fsync`), and refused
/// on load when group or others have any permission on it or another user owns it.
///
/// The file (format version 1):
/// ```json
/// {"applicationID":"…","credential":"<64 hex>","deviceID":"<32 hex>","discoverySecret":"<64 hex>",
///  "serverAddress":"…","serverFingerprint":"<64 hex>","version":1}
/// ```
/// `discoverySecret` is absent from files written before pairing delivered it; such a file
/// still loads (with `discoverySecret` nil): the device connects as before but cannot recognise
/// the desktop's advertisement until it pairs again.
public struct RivetCompanionCredentialStore: Sendable {
    /// The largest file `load()` reads (16 KiB).
    public static let maximumFileSize = 16 * 1024
    /// The format version this library writes and reads.
    public static let formatVersion = 1

    /// The credential file's path.
    public let path: String

    /// A store for the file at `path` (nothing is touched until `save` or `load`).
    public init(path: String) { self.path = path }

    /// A store at `RivetStatePaths.companionCredentialPath(environment:)`.
    /// - Throws: `RivetDevicePairingValueError.noStateDirectory`.
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RivetDevicePairingValueError) -> RivetCompanionCredentialStore
    {
        RivetCompanionCredentialStore(path: try RivetStatePaths.companionCredentialPath(environment: environment))
    }

    /// Writes `credential`, replacing any earlier file atomically.
    /// - Throws: `RivetCompanionCredentialStoreError.notRegularFile` when `path` names a
    ///   directory or no file name, `.fileSystem` when a system call fails (the old file, if
    ///   any, is then unchanged and no temporary file is left).
    public func save(_ credential: RivetCompanionCredential) throws(RivetCompanionCredentialStoreError) {
        var members: [String: JSONValue] = [
            "version": .integer(Self.formatVersion), "deviceID": .string(credential.deviceID.hex),
            "credential": .string(credential.credential.hexForStorage),
            "serverFingerprint": .string(credential.serverFingerprint.hex),
            "applicationID": .string(credential.applicationID.value), "serverAddress": .string(credential.serverAddress),
        ]
        if let secret = credential.discoverySecret { members["discoverySecret"] = .string(secret.hexForStorage) }
        // Slashes escaped (`\/`), as the format has always been written.
        var writer = JSONWriter(escapesSlashes: true)
        // One level of nesting, within every bound: the write cannot fail.
        try? writer.write(.object(members))
        var bytes = writer.bytes + [UInt8(ascii: "\n")]
        SecretBytes.wipe(&writer.bytes)
        defer { SecretBytes.wipe(&bytes) }
        do {
            try PrivateFile.replace(path, with: bytes)
        } catch {
            throw RivetCompanionCredentialStoreError(error.naming(["rename": "rename to"]), path: path)
        }
    }

    /// Reads the credential.
    /// - Throws: `RivetCompanionCredentialStoreError.notFound`, `.symlink`, `.notRegularFile`,
    ///   `.insecurePermissions` (group or others have any permission bit, or another user owns
    ///   it), `.tooLarge`, `.unsupportedVersion` (a newer format), `.invalidContents` (not the
    ///   JSON above; the message names the field, never a value), `.fileSystem`.
    public func load() throws(RivetCompanionCredentialStoreError) -> RivetCompanionCredential {
        var bytes: [UInt8]
        do {
            bytes = try PrivateFile.read(path, limit: Self.maximumFileSize)
        } catch {
            throw RivetCompanionCredentialStoreError(error, path: path)
        }
        defer { SecretBytes.wipe(&bytes) }
        let file = try CredentialFile(parsing: bytes, invalid: invalid)
        guard file.version == Self.formatVersion else {
            throw RivetCompanionCredentialStoreError.unsupportedVersion.with(
                "\(path) has format version \(file.version); this program reads version \(Self.formatVersion)")
        }
        guard let deviceID = DeviceID(hex: file.deviceID) else { throw invalid("\"deviceID\" is not 32 hex digits") }
        guard let credential = PairingCredential(hex: file.credential) else {
            throw invalid("\"credential\" is not 64 hex digits")
        }
        guard let fingerprint = SPKIFingerprint(hex: file.serverFingerprint) else {
            throw invalid("\"serverFingerprint\" is not 64 hex digits")
        }
        var discoverySecret: RivetDiscoverySecret?
        if let hex = file.discoverySecret {
            guard let secret = RivetDiscoverySecret(hex: hex) else {
                throw invalid("\"discoverySecret\" is not 64 hex digits")
            }
            discoverySecret = secret
        }
        let applicationID: RivetApplicationID
        do {
            applicationID = try RivetApplicationID(file.applicationID)
        } catch {
            throw invalid("\"applicationID\" is not a valid application ID")
        }
        do {
            return try RivetCompanionCredential(
                deviceID: deviceID, credential: credential, serverFingerprint: fingerprint,
                applicationID: applicationID, serverAddress: file.serverAddress, discoverySecret: discoverySecret)
        } catch {
            throw invalid("\"serverAddress\" is not a valid server address")
        }
    }

    /// Deletes the credential file (the device forgets its pairing).
    /// - Throws: `RivetCompanionCredentialStoreError.notFound` if there is none, `.fileSystem`.
    public func remove() throws(RivetCompanionCredentialStoreError) {
        guard unlink(path) == 0 else {
            let number = errno
            if number == ENOENT { throw RivetCompanionCredentialStoreError(PrivateFileError.notFound, path: path) }
            throw RivetCompanionCredentialStoreError(
                PrivateFileError.system(SystemError("unlink", path: path, errno: number)), path: path)
        }
        PrivateFile.syncDirectory(PrivateFile.splitPath(path).directory)
    }

    private func invalid(_ detail: String) -> RivetCompanionCredentialStoreError {
        RivetCompanionCredentialStoreError.invalidContents.with("\(path) is not a companion credential file: \(detail)")
    }

}

/// The fields of a credential file, read in the order they were always checked: the first
/// missing, null or mistyped one is named.
private struct CredentialFile {
    let version: Int
    let deviceID: String
    let credential: String
    let serverFingerprint: String
    let applicationID: String
    let serverAddress: String
    let discoverySecret: String?

    init(
        parsing bytes: [UInt8], invalid: (String) -> RivetCompanionCredentialStoreError
    ) throws(RivetCompanionCredentialStoreError) {
        guard case .object(let members)? = try? JSONParser.parse(bytes) else { throw invalid("it is not a JSON object") }
        func field(_ name: String) throws(RivetCompanionCredentialStoreError) -> JSONValue {
            switch members[name] {
            case nil: throw invalid("the field \"\(name)\" is missing")
            case .null?: throw invalid("the field \"\(name)\" is null")
            case let value?: return value
            }
        }
        func string(_ name: String) throws(RivetCompanionCredentialStoreError) -> String {
            guard let text = try field(name).string else { throw invalid("the field \"\(name)\" has the wrong type") }
            return text
        }
        guard let version = try field("version").integer.flatMap({ Int(exactly: $0) }) else {
            throw invalid("the field \"version\" has the wrong type")
        }
        self.version = version
        deviceID = try string("deviceID")
        credential = try string("credential")
        serverFingerprint = try string("serverFingerprint")
        applicationID = try string("applicationID")
        serverAddress = try string("serverAddress")
        if members["discoverySecret"] == nil || members["discoverySecret"] == .null {
            discoverySecret = nil
        } else {
            discoverySecret = try string("discoverySecret")
        }
    }
}

/// Why the companion's credential file could not be saved, loaded or removed. Messages name the
/// file and the field, never the credential.
///
/// Equality compares only the kind (`code`), never the message.
public struct RivetCompanionCredentialStoreError: CodedErrorMessage {
    public let code: Code
    /// What failed and why, naming the file.
    public package(set) var message: String
    /// The `errno` behind a `.fileSystem` error.
    public internal(set) var systemErrno: Int32?

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case notFound, symlink, notRegularFile, insecurePermissions, tooLarge, invalidContents, unsupportedVersion, fileSystem
    }

    /// There is no credential file: this device is not paired.
    public static let notFound = Self(code: .notFound, message: "no companion credential file")
    /// The path is a symbolic link; it is never followed.
    public static let symlink = Self(code: .symlink, message: "the companion credential path is a symbolic link")
    /// The path is a directory or special file, or names no file.
    public static let notRegularFile = Self(code: .notRegularFile, message: "the companion credential path is not a regular file")
    /// Group or others have permission bits on the file, or another user owns it.
    public static let insecurePermissions = Self(code: .insecurePermissions, message: "the companion credential file is accessible to other users")
    /// The file is larger than `RivetCompanionCredentialStore.maximumFileSize`.
    public static let tooLarge = Self(code: .tooLarge, message: "the companion credential file is too large")
    /// The file is not the expected JSON.
    public static let invalidContents = Self(code: .invalidContents, message: "the companion credential file is malformed")
    /// The file was written in a newer format.
    public static let unsupportedVersion = Self(code: .unsupportedVersion, message: "the companion credential file has an unsupported format version")
    /// A system call failed; `systemErrno` says why.
    public static let fileSystem = Self(code: .fileSystem, message: "a file operation on the companion credential failed")

}

extension RivetCompanionCredentialStoreError {
    init(_ problem: PrivateFileError, path: String) {
        let message = problem.explanation(for: path, what: "companion credential")
        switch problem {
        case .notFound: self.init(code: .notFound, message: message)
        case .symlink: self.init(code: .symlink, message: message)
        case .notRegularFile: self.init(code: .notRegularFile, message: message)
        case .wrongOwner, .insecureMode: self.init(code: .insecurePermissions, message: message)
        case .tooLarge: self.init(code: .tooLarge, message: message)
        case .system(let error): self.init(code: .fileSystem, message: message, systemErrno: error.errno)
        }
    }
}
