import CodedError

#if canImport(Glibc)
import Glibc
#endif
import SystemKit

/// A failure reading or writing a private-key file.
///
/// Equality compares only the kind of failure (`.io` also compares the errno), never the message.
/// Messages name the path and the reason; they never contain key material.
public struct KeyStoreError: CodedError {
    public let code: Code
    /// What failed and why, naming the path.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case keyExists, symlink, notRegularFile, insecurePermissions, notFound, tooLarge, invalidKey
        case keyGenerationFailed
        case io(Int32)
    }

    /// The path already holds a different key, or a file that cannot be read as a key; nothing was written.
    public static let keyExists = KeyStoreError(code: .keyExists, message: "a different key already exists")
    /// The path (or the file found at it) is a symbolic link; key files are never followed.
    public static let symlink = KeyStoreError(code: .symlink, message: "path is a symbolic link")
    /// The path names something other than a regular file (directory, FIFO, device, socket).
    public static let notRegularFile = KeyStoreError(code: .notRegularFile, message: "not a regular file")
    /// The file is accessible to group or others, or is owned by another user.
    public static let insecurePermissions = KeyStoreError(code: .insecurePermissions, message: "insecure permissions")
    /// No file exists at the path.
    public static let notFound = KeyStoreError(code: .notFound, message: "no such file")
    /// The file is larger than `PEMKeyStore.maximumFileSize`.
    public static let tooLarge = KeyStoreError(code: .tooLarge, message: "file too large")
    /// The file's contents are not a P-256 private key PEM.
    public static let invalidKey = KeyStoreError(code: .invalidKey, message: "invalid key")
    /// OpenSSL could not generate a new key.
    public static let keyGenerationFailed = KeyStoreError(code: .keyGenerationFailed, message: "key generation failed")
    /// A system call failed with `errno`.
    public static func io(_ errno: Int32) -> KeyStoreError { KeyStoreError(code: .io(errno), message: "I/O error \(errno)") }

    /// The errno of an `.io` error, `nil` for every other kind.
    public var systemErrno: Int32? {
        if case .io(let value) = code { value } else { nil }
    }

    fileprivate func at(_ path: String, _ detail: String) -> KeyStoreError {
        KeyStoreError(code: code, message: "\(path): \(detail)")
    }

    fileprivate static func system(_ what: String, _ path: String, _ errno: Int32) -> KeyStoreError {
        KeyStoreError(code: .io(errno), message: "\(path): \(what) failed: \(String(cString: strerror(errno)))")
    }
}

extension KeyStoreError {
    /// The error for what `PrivateFile` found wrong with the key file at `path`.
    fileprivate init(_ problem: PrivateFileError, path: String) {
        switch problem {
        case .notFound: self = KeyStoreError.notFound.at(path, "no key file")
        case .symlink:
            self = KeyStoreError.symlink.at(path, "is a symbolic link; key files are never followed through links")
        case .notRegularFile: self = KeyStoreError.notRegularFile.at(path, "is not a regular file")
        case .insecureMode(let mode):
            self = KeyStoreError.insecurePermissions.at(path, "has mode 0\(String(mode, radix: 8)), so group or others can access the private key; it must be 0600 (chmod 600)")
        case .wrongOwner(let uid):
            self = KeyStoreError.insecurePermissions.at(path, "is owned by uid \(uid), not by this user (uid \(geteuid()))")
        case .tooLarge(let size):
            self = KeyStoreError.tooLarge.at(path, "is \(size) bytes; a key file is at most \(PEMKeyStore.maximumFileSize)")
        case .system(let error): self = .system(error.operation, error.path.isEmpty ? path : error.path, error.errno)
        }
    }
}

/// Stores a `P256PrivateKey` as a PEM file readable only by its owner (mode 0600).
///
/// Writes are atomic and never replace a key (`PrivateFile.createOnce`): the PEM goes to a fresh
/// temporary file in the same directory (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600, fsync) which is then
/// hard-linked to the final name with `link(2)`, which fails rather than overwrite. Readers therefore see either no file or
/// the whole key, and when several processes or threads create a key at once exactly one wins.
/// Missing parent directories are created with mode 0700; existing ones are left as they are.
public enum PEMKeyStore {
    /// Largest key file `load(from:)` accepts (64 KiB); a P-256 PEM is about 240 bytes.
    public static let maximumFileSize = 64 * 1024

    /// Writes `key` to `path` (see the type's documentation for how).
    ///
    /// Succeeds without writing if `path` already holds this same key. Throws
    /// `KeyStoreError.keyExists` if it holds a different key or an unreadable one (the file is
    /// left untouched), `.symlink` if `path` is a symbolic link, `.notRegularFile` if it is a
    /// directory or special file, `.io(errno)` when a system call fails.
    public static func save(_ key: P256PrivateKey, to path: String) throws(KeyStoreError) {
        guard !PrivateFile.splitPath(path).name.isEmpty else {
            throw KeyStoreError.notRegularFile.at(path, "does not name a file (empty name or trailing slash)")
        }
        do {
            try PrivateFile.createDirectories(PrivateFile.splitPath(path).directory)
        } catch {
            throw KeyStoreError.system(error.operation, error.path, error.errno)
        }
        let target = key.fingerprint
        var pem = Array(key.pemRepresentation.utf8)
        defer { wipe(&pem) }
        // A concurrent remover could empty the path between our link() and re-check; retry then.
        for _ in 0..<3 {
            if try existingKeyMatches(target, at: path) { return }
            do {
                if try PrivateFile.createOnce(path, with: pem) { return }
            } catch {
                throw KeyStoreError(error.naming(["create": "create temporary file", "link": "link to final name"]), path: path)
            }
        }
        throw KeyStoreError.keyExists.at(path, "the file keeps changing while saving; refusing to overwrite it")
    }

    /// Reads the key at `path`.
    ///
    /// Throws `KeyStoreError.notFound` if there is no file, `.symlink` if `path` is a symbolic
    /// link, `.notRegularFile` for anything but a regular file, `.insecurePermissions` if group or
    /// others have any permission bit or another user owns it, `.tooLarge` above
    /// `maximumFileSize`, `.invalidKey` if the contents are not a P-256 private key PEM, and
    /// `.io(errno)` when a system call fails.
    public static func load(from path: String) throws(KeyStoreError) -> P256PrivateKey {
        var bytes: [UInt8]
        do {
            bytes = try PrivateFile.read(path, limit: maximumFileSize)
        } catch {
            throw KeyStoreError(error, path: path)
        }
        defer { wipe(&bytes) }
        do {
            return try P256PrivateKey(pem: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw KeyStoreError.invalidKey.at(path, "does not hold a P-256 private key PEM (\(error.message))")
        }
    }

    /// Loads the key at `path`, or on first use generates one and saves it.
    ///
    /// Concurrent callers (threads or processes) all end up with the same key: only one `link(2)`
    /// can create the file, and every other caller loads the winner's key. Throws what `load(from:)`
    /// and `save(_:to:)` throw, and `KeyStoreError.keyGenerationFailed` if OpenSSL cannot generate.
    public static func loadOrCreate(at path: String) throws(KeyStoreError) -> P256PrivateKey {
        do {
            return try load(from: path)
        } catch let error where error == .notFound {}
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey.generate()
        } catch {
            throw KeyStoreError.keyGenerationFailed.at(path, error.message)
        }
        do {
            try save(key, to: path)
            return key
        } catch let error where error == .keyExists {
            return try load(from: path)
        }
    }

    /// True if `path` holds the key with fingerprint `target`, false if nothing is there.
    private static func existingKeyMatches(_ target: SPKIFingerprint, at path: String) throws(KeyStoreError) -> Bool {
        var info = stat()
        if lstat(path, &info) != 0 {
            let error = errno
            if error == ENOENT { return false }
            throw KeyStoreError.system("lstat", path, error)
        }
        switch info.st_mode & S_IFMT {
        case S_IFLNK: throw KeyStoreError.symlink.at(path, "is a symbolic link; refusing to write a key through it")
        case S_IFREG: break
        default: throw KeyStoreError.notRegularFile.at(path, "exists and is not a regular file")
        }
        let existing: P256PrivateKey
        do {
            existing = try load(from: path)
        } catch let error where error == .notFound {
            return false
        } catch {
            throw KeyStoreError.keyExists.at(path, "already holds a key file that cannot be used (\(error.message)); not overwriting it")
        }
        guard existing.fingerprint == target else {
            throw KeyStoreError.keyExists.at(path, "already holds a different key; not overwriting it")
        }
        return true
    }
}
