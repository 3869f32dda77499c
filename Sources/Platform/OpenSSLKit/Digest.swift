internal import COpenSSL

/// One EVP digest context: what ``SHA256`` and ``SHA512`` hash with. Not thread-safe.
final class EVPHasher {
    private let context: OpaquePointer
    private let algorithm: () -> OpaquePointer?
    private let count: Int
    private let name: String

    /// A hasher over `algorithm` (`EVP_sha256`, ...), whose digests are `count` bytes long.
    init(_ algorithm: @escaping () -> OpaquePointer?, count: Int, name: String) {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed: out of memory") }
        self.context = context
        self.algorithm = algorithm
        self.count = count
        self.name = name
        reset()
    }

    deinit { EVP_MD_CTX_free(context) }

    func update(_ bytes: some Collection<UInt8>) {
        withContiguousBytes(bytes) { buffer in
            guard buffer.count > 0 else { return }
            precondition(EVP_DigestUpdate(context, buffer.baseAddress, buffer.count) == 1, "EVP_DigestUpdate failed")
        }
    }

    func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: count)
        var length: UInt32 = 0
        precondition(
            EVP_DigestFinal_ex(context, &digest, &length) == 1 && Int(length) == count, "EVP_DigestFinal_ex failed")
        reset()
        return digest
    }

    private func reset() {
        precondition(EVP_DigestInit_ex(context, algorithm(), nil) == 1, "EVP_DigestInit_ex(\(name)) failed")
    }
}

/// SHA-256 (FIPS 180-4) over OpenSSL's EVP interface.
///
/// Use `SHA256.hash(_:)` for bytes in memory, or create a hasher and feed it chunks with
/// `update(_:)` (for example a streamed download), then call `finalize()`.
/// A hasher is not thread-safe; it belongs to one owner at a time.
public final class SHA256 {
    /// Length of a SHA-256 digest in bytes (32).
    public static let digestCount = 32

    private let hasher = EVPHasher({ EVP_sha256() }, count: digestCount, name: "SHA-256")

    /// Creates an empty hasher. Traps only if OpenSSL cannot allocate a digest context.
    public init() {}

    /// The 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Feeds more bytes into the digest. Any size, including empty.
    public func update(_ bytes: some Collection<UInt8>) { hasher.update(bytes) }

    /// Returns the 32-byte digest of everything fed so far, then resets the hasher to empty so it
    /// can be reused.
    public func finalize() -> [UInt8] { hasher.finalize() }
}

/// SHA-512 (FIPS 180-4) over OpenSSL's EVP interface, used as ``SHA256`` is.
public final class SHA512 {
    /// Length of a SHA-512 digest in bytes (64).
    public static let digestCount = 64

    private let hasher = EVPHasher({ EVP_sha512() }, count: digestCount, name: "SHA-512")

    /// Creates an empty hasher. Traps only if OpenSSL cannot allocate a digest context.
    public init() {}

    /// The 64-byte SHA-512 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let hasher = SHA512()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Feeds more bytes into the digest. Any size, including empty.
    public func update(_ bytes: some Collection<UInt8>) { hasher.update(bytes) }

    /// Returns the 64-byte digest of everything fed so far, then resets the hasher to empty.
    public func finalize() -> [UInt8] { hasher.finalize() }
}

/// HMAC-SHA256 (RFC 2104, RFC 4231).
public enum HMACSHA256 {
    /// The 32-byte HMAC-SHA256 tag of `message` under `key`. Keys of any length are accepted
    /// (longer than 64 bytes are hashed first, as RFC 2104 says).
    public static func authenticate(_ message: some Collection<UInt8>, key: some Collection<UInt8>) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: SHA256.digestCount)
        var length: UInt32 = 0
        withContiguousBytes(key) { key in
            withContiguousBytes(message) { message in
                // OpenSSL refuses a NULL key pointer even when the length is zero.
                let one: UInt8 = 0
                withUnsafeBytes(of: one) { stand in
                    let keyPointer = key.count > 0 ? key.baseAddress! : stand.baseAddress!
                    let messagePointer = message.count > 0
                        ? message.baseAddress!.assumingMemoryBound(to: UInt8.self)
                        : stand.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    let result = HMAC(EVP_sha256(), keyPointer, Int32(key.count), messagePointer, message.count, &tag, &length)
                    precondition(result != nil && length == 32, "HMAC-SHA256 failed: \(drainOpenSSLErrors())")
                }
            }
        }
        return tag
    }
}

/// Compares two byte strings in time that depends only on their length, never on where they
/// differ (OpenSSL's `CRYPTO_memcmp`). Different lengths return `false` without comparing contents.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    guard !a.isEmpty else { return true }
    return a.withUnsafeBytes { a in
        b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// `count` random bytes (`count` must be >= 0; 0 returns an empty array).
    /// Throws `OpenSSLError.operationFailed` if OpenSSL's generator is not seeded or fails.
    public static func bytes(_ count: Int) throws(OpenSSLError) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes: negative count \(count)")
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let chunk = min(count - offset, Int(Int32.max))
            let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress! + offset, Int32(chunk)) }
            guard ok == 1 else { throw OpenSSLError.operationFailed.with("RAND_bytes(\(chunk)) failed") }
            offset += chunk
        }
        return bytes
    }
}

/// Runs `body` over the bytes of `collection`, copying only when it has no contiguous storage.
func withContiguousBytes<R>(_ collection: some Collection<UInt8>, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    if let result = try collection.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    return try Array(collection).withUnsafeBytes(body)
}
