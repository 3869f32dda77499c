import ByteText
import Foundation
import OpenSSLKit
import RivetPairing

/// The discovery side of the server's random 256-bit discovery secret S (the type lives in
/// RivetPairing, which carries S to devices).
///
/// The gateway keeps S in `<state directory>/discovery-secret` and hands it to each device
/// inside the encrypted pairing acceptance. The advertisement's TXT key `h` is a hint derived
/// from S and the current hour (``RivetDiscoverySecret/hint(for:)``), so a paired device can tell
/// this desktop from other Rivet gateways (``RivetDiscoverySecret/recognizes(_:at:)``) while a
/// passive observer without S cannot link one hour's advertisement to another's. Rotating S
/// (``RivetDiscoverySecret/rotate(stateDirectory:)``) makes every device that holds the old one
/// unable to recognise the desktop until it pairs again: do it after revoking devices.
///
/// The secret's bytes never appear in `description`, logs or error messages.
extension RivetDiscoverySecret {
    /// The file name of the secret in the state directory.
    public static let fileName = "discovery-secret"
    /// The label that separates the hint's HMAC input from any other use of S.
    public static let hintLabel = Array("rivet-discovery-hint-v1".utf8)

    /// A secret from exactly 32 bytes.
    /// Throws `RivetDiscoveryError.invalidSecret` for any other length.
    public init(bytes: [UInt8]) throws(RivetDiscoveryError) {
        guard let secret = RivetDiscoverySecret(bytes: bytes[...]) else {
            throw RivetDiscoveryError.invalidSecret.with(
                "a discovery secret is exactly \(Self.byteCount) bytes, not \(bytes.count)")
        }
        self = secret
    }

    /// A fresh secret from OpenSSL's secure random generator.
    /// Throws `RivetDiscoveryError.randomness` when the generator fails.
    public static func generate() throws(RivetDiscoveryError) -> RivetDiscoverySecret {
        do {
            return try RivetDiscoverySecret(bytes: SecureRandom.bytes(byteCount))
        } catch let error as RivetDiscoveryError {
            throw error
        } catch {
            throw RivetDiscoveryError.randomness.with("cannot draw a discovery secret: \(error)")
        }
    }

    /// The hint for `epoch`: the first 8 bytes of
    /// HMAC-SHA256(S, "rivet-discovery-hint-v1" ‖ u64be(epoch)).
    public func hint(for epoch: RivetDiscoveryEpoch) -> RivetDiscoveryHint {
        var message = Self.hintLabel
        withUnsafeBytes(of: epoch.value.bigEndian) { message.append(contentsOf: $0) }
        let tag = HMACSHA256.authenticate(message, key: bytes)
        return RivetDiscoveryHint(bytes: Array(tag.prefix(RivetDiscoveryHint.byteCount)))!
    }

    /// Whether `hint` was made from this secret in the epoch of `date` or the one before or
    /// after (an hour of clock skew either way). Each comparison takes the same time wherever
    /// the hints differ.
    public func recognizes(_ hint: RivetDiscoveryHint, at date: Date) -> Bool {
        let now = RivetDiscoveryEpoch(containing: date)
        var matched = false
        for epoch in [now.previous, now, now.next].compactMap({ $0 }) {
            if constantTimeEqual(self.hint(for: epoch).bytes, hint.bytes) { matched = true }
        }
        return matched
    }

    /// Loads the secret from `<stateDirectory>/discovery-secret`, or creates it (32 random bytes,
    /// written as 64 lowercase hexadecimal digits and a newline, mode 0600, missing directories
    /// 0700) when there is none. Creation is atomic and happens once: two processes racing to
    /// create it end up with the same secret.
    ///
    /// Throws `RivetDiscoveryError.secretFileUnsafe` when the file is a symbolic link, not a
    /// regular file, owned by another user or accessible to group or others;
    /// `.secretFileCorrupt` when its content is not exactly 64 lowercase hex digits and a
    /// newline; `.secretFileIO` when the file system fails; `.randomness` when no secret can be
    /// drawn. A refused file is left as it is.
    public static func loadOrCreate(stateDirectory: String) throws(RivetDiscoveryError) -> RivetDiscoverySecret {
        let path = Self.path(in: stateDirectory)
        if let existing = try readSecretFile(path) { return existing }
        let secret = try generate()
        if try createSecretFileOnce(path, contents: encodeSecretFile(secret)) { return secret }
        // Another process created it first: use theirs.
        guard let existing = try readSecretFile(path) else {
            throw RivetDiscoveryError.secretFileIO.with("\(path) vanished right after it was created")
        }
        return existing
    }

    /// Loads the secret from `<stateDirectory>/discovery-secret` without creating anything
    /// (`rivetd --check`); nil when there is no file.
    /// Throws as ``loadOrCreate(stateDirectory:)`` does for an existing file.
    public static func loadExisting(stateDirectory: String) throws(RivetDiscoveryError) -> RivetDiscoverySecret? {
        try readSecretFile(path(in: stateDirectory))
    }

    /// Replaces the secret in `<stateDirectory>/discovery-secret` with a fresh one (atomically:
    /// readers see the old secret or the new one) and returns it. Every device paired before
    /// holds the old secret and no longer recognises this desktop's advertisement until it
    /// pairs again; a running advertiser keeps the old secret until it is started again with
    /// the new one.
    /// Throws as ``loadOrCreate(stateDirectory:)`` does; an unsafe existing file is refused
    /// and left as it is.
    public static func rotate(stateDirectory: String) throws(RivetDiscoveryError) -> RivetDiscoverySecret {
        let path = Self.path(in: stateDirectory)
        _ = try inspectSecretFile(path)
        let secret = try generate()
        try replaceSecretFile(path, contents: encodeSecretFile(secret))
        return secret
    }

    /// The secret's file in `stateDirectory`: `discovery-secret`.
    public static func path(in stateDirectory: String) -> String {
        var directory = Substring(stateDirectory)
        while directory.count > 1 && directory.hasSuffix("/") { directory = directory.dropLast() }
        return (directory == "/" ? "" : String(directory)) + "/" + fileName
    }
}

/// The file's bytes for `secret`: 64 lowercase hex digits and a newline.
func encodeSecretFile(_ secret: RivetDiscoverySecret) -> [UInt8] {
    Array((Hex.encode(secret.bytes) + "\n").utf8)
}

/// The secret in a file's bytes, or nil unless they are exactly 64 lowercase hex digits and a
/// newline.
func decodeSecretFile(_ contents: [UInt8]) -> RivetDiscoverySecret? {
    guard contents.count == RivetDiscoverySecret.byteCount * 2 + 1, contents.last == 0x0A else { return nil }
    guard let bytes = Hex.decode(bytes: contents.dropLast(), lowercaseOnly: true) else { return nil }
    return RivetDiscoverySecret(bytes: bytes[...])
}
