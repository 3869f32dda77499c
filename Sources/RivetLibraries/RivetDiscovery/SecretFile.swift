import ByteText
#if canImport(Glibc)
import Glibc
#endif
import RivetPairing
import SystemKit

// The discovery secret's file: a private regular file (owner only, mode 0600, never through a
// symbolic link) holding 64 lowercase hex digits and a newline.

/// The secret in `path`, or nil when there is no file.
/// Throws `.secretFileUnsafe`, `.secretFileCorrupt` or `.secretFileIO`.
func readSecretFile(_ path: String) throws(RivetDiscoveryError) -> RivetDiscoverySecret? {
    var contents: [UInt8]
    do {
        contents = try PrivateFile.read(path, limit: RivetDiscoverySecret.byteCount * 2 + 1)
    } catch .notFound {
        return nil
    } catch .tooLarge {
        contents = []
    } catch {
        throw secretFileError(error, path)
    }
    defer { SecretBytes.wipe(&contents) }
    guard let secret = decodeSecretFile(contents) else {
        throw RivetDiscoveryError.secretFileCorrupt.with(
            "\(path) does not hold a discovery secret (64 lowercase hexadecimal digits and a newline); it is left as it is: move it away to create a new secret, and pair every device again"
        )
    }
    return secret
}

/// Whether `path` exists; throws `.secretFileUnsafe` when it exists but is not private, and
/// `.secretFileIO` when it cannot be inspected.
func inspectSecretFile(_ path: String) throws(RivetDiscoveryError) -> Bool {
    do {
        return try PrivateFile.inspect(path) != nil
    } catch {
        throw secretFileError(error, path)
    }
}

/// Creates `path` with `contents` unless it exists (`PrivateFile.createOnce`: exactly one
/// creator wins and no reader ever sees a partial file). Returns false when `path` existed.
func createSecretFileOnce(_ path: String, contents: [UInt8]) throws(RivetDiscoveryError) -> Bool {
    do {
        return try PrivateFile.createOnce(path, with: contents)
    } catch {
        throw secretFileError(error.naming(["link": "create"]), path)
    }
}

/// Replaces `path` with `contents` atomically (a private temporary file renamed over it).
func replaceSecretFile(_ path: String, contents: [UInt8]) throws(RivetDiscoveryError) {
    do {
        try PrivateFile.replace(path, with: contents)
    } catch {
        throw secretFileError(error.naming(["rename": "replace"]), path)
    }
}

/// The public error for what is wrong with the secret file at `path`.
private func secretFileError(_ problem: PrivateFileError, _ path: String) -> RivetDiscoveryError {
    switch problem {
    case .notFound, .notRegularFile, .tooLarge:
        RivetDiscoveryError.secretFileUnsafe.with("\(path) is not a regular file")
    case .symlink:
        RivetDiscoveryError.secretFileUnsafe.with(
            "\(path) is a symbolic link; the discovery secret is never read through a link")
    case .wrongOwner(let uid):
        RivetDiscoveryError.secretFileUnsafe.with(
            "\(path) is owned by uid \(uid), not by this user (uid \(geteuid())); refusing a secret another user controls"
        )
    case .insecureMode(let mode):
        RivetDiscoveryError.secretFileUnsafe.with(
            "\(path) has mode 0\(String(mode, radix: 8)), so group or others can access the discovery secret; it must be 0600 (chmod 600 \(path), then rotate the secret: it may have been read)"
        )
    case .system(let error):
        RivetDiscoveryError.secretFileIO.with(error.description)
    }
}
