import CodedError
import Foundation
import OpenSSLKit
import RivetPairing
import RivetState

/// This install's server identity: a P-256 private key kept in a 0600 PEM file under the rivet
/// state directory (created on first start, never replaced), and a self-signed certificate over
/// it, signed afresh at each start, that TLS presents. Clients pin the key's SPKI fingerprint.
/// See docs/architecture.md, "Server identity".
public final class RivetServerIdentity: Sendable {
    /// The key file's name inside the state directory (`server-key.pem`).
    public static let keyFileName = "server-key.pem"
    /// The common name of the certificate (`rivetd`).
    public static let commonName = "rivetd"

    /// The key file's path.
    public let keyPath: String
    /// The certificate TLS presents, signed by `key` at load time.
    public let certificate: SelfSignedCertificate
    /// `F`: the SHA-256 of the key's SubjectPublicKeyInfo DER, which clients pin.
    public let fingerprint: SPKIFingerprint
    /// The TLS 1.3 server context presenting this identity.
    public let serverContext: TLSServerContext

    private init(keyPath: String, key: P256PrivateKey) throws(RivetIdentityError) {
        do {
            let certificate = try SelfSignedCertificate(key: key, commonName: Self.commonName)
            self.serverContext = try TLSServerContext(key: key, certificate: certificate)
            self.certificate = certificate
        } catch {
            throw RivetIdentityError.tlsSetupFailed.with("building the TLS identity from \(keyPath) failed: \(error.message)")
        }
        self.keyPath = keyPath
        self.fingerprint = key.fingerprint
    }

    /// Loads the identity from `<stateDirectory>/server-key.pem`, creating the key (and missing
    /// directories, mode 0700) on first use. Concurrent first starts end with one key.
    /// - Throws: `RivetIdentityError.keyFileUnusable` when the file exists but cannot be used
    ///   (wrong permissions or owner, a symbolic link, not a P-256 key PEM, too large), naming
    ///   the path and the reason; `.keyCreationFailed` when no key could be generated or
    ///   written; `.tlsSetupFailed` when OpenSSL cannot build the certificate or context.
    public static func loadOrProvision(stateDirectory: String) throws(RivetIdentityError) -> RivetServerIdentity {
        let path = keyPath(in: stateDirectory)
        let key: P256PrivateKey
        do {
            key = try PEMKeyStore.loadOrCreate(at: path)
        } catch {
            throw classify(error)
        }
        return try RivetServerIdentity(keyPath: path, key: key)
    }

    /// Loads an existing identity without ever creating one.
    /// - Throws: `RivetIdentityError.notProvisioned` when there is no key file yet, otherwise
    ///   what `loadOrProvision(stateDirectory:)` throws.
    public static func load(stateDirectory: String) throws(RivetIdentityError) -> RivetServerIdentity {
        let path = keyPath(in: stateDirectory)
        let key: P256PrivateKey
        do {
            key = try PEMKeyStore.load(from: path)
        } catch let error where error == .notFound {
            throw RivetIdentityError.notProvisioned.with(
                "\(path) does not exist: this install has no server identity yet (rivetd creates it on first start)")
        } catch {
            throw classify(error)
        }
        return try RivetServerIdentity(keyPath: path, key: key)
    }

    /// The identity in the standard state directory (`$XDG_STATE_HOME/rivet`, else
    /// `$HOME/.local/state/rivet`), created on first use.
    /// - Throws: `RivetIdentityError.noStateDirectory` when the environment names none,
    ///   otherwise what `loadOrProvision(stateDirectory:)` throws.
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RivetIdentityError) -> RivetServerIdentity
    {
        let directory: String
        do {
            directory = try RivetStatePaths.stateDirectory(environment: environment)
        } catch {
            throw RivetIdentityError.noStateDirectory.with(error.message)
        }
        return try loadOrProvision(stateDirectory: directory)
    }

    /// `<stateDirectory>/server-key.pem`.
    public static func keyPath(in stateDirectory: String) -> String {
        var directory = Substring(stateDirectory)
        while directory.count > 1 && directory.hasSuffix("/") { directory = directory.dropLast() }
        return directory == "/" ? "/" + keyFileName : "\(directory)/\(keyFileName)"
    }

    /// The fingerprint as 64 lowercase hex digits (what `--fingerprint` prints for scripts).
    public var fingerprintHex: String { fingerprint.hex }

    /// The fingerprint for a person comparing screens: 16 groups of 4 hex digits separated by
    /// spaces.
    public var fingerprintForPeople: String { fingerprint.grouped }

    private static func classify(_ error: KeyStoreError) -> RivetIdentityError {
        if error == .keyGenerationFailed {
            return RivetIdentityError.keyCreationFailed.with("the server key could not be generated: \(error.message)")
        }
        if error.systemErrno != nil || error == .notFound {
            return RivetIdentityError.keyCreationFailed.with("the server key could not be read or written: \(error.message)")
        }
        return RivetIdentityError.keyFileUnusable.with(
            "the server key file cannot be used and is left untouched: \(error.message)")
    }
}

/// Why the server identity could not be loaded or created.
///
/// Equality compares only the kind, never the message. Messages name the key path and the
/// reason, never key material.
public struct RivetIdentityError: CodedErrorMessage {
    public let code: Code
    /// What failed and why.
    public package(set) var message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case noStateDirectory, notProvisioned, keyFileUnusable, keyCreationFailed, tlsSetupFailed
    }

    /// The environment names no state directory (neither `XDG_STATE_HOME` nor `HOME` is an absolute path).
    public static let noStateDirectory = Self(code: .noStateDirectory, message: "no state directory for the server identity")
    /// No key file exists yet (only from `load(stateDirectory:)`).
    public static let notProvisioned = Self(code: .notProvisioned, message: "no server identity has been created yet")
    /// A key file exists but cannot be used (permissions, owner, link, contents, size); it is never replaced.
    public static let keyFileUnusable = Self(code: .keyFileUnusable, message: "the server key file cannot be used")
    /// A new key could not be generated or written (or the file could not be read).
    public static let keyCreationFailed = Self(code: .keyCreationFailed, message: "the server key could not be created")
    /// OpenSSL could not build the certificate or the TLS context.
    public static let tlsSetupFailed = Self(code: .tlsSetupFailed, message: "the TLS identity could not be built")

}
