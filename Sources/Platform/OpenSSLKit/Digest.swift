internal import COpenSSL

/// One EVP digest context: what ``SHA256`` and ``SHA512`` hash with. Not thread-safe.
final class EVPHasher {
    private let context: OpaquePointer
    private let function: SHA2Function

    /// A hasher computing `function`.
    init(_ function: SHA2Function) {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed: out of memory") }
        self.context = context
        self.function = function
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
        var digest = [UInt8](repeating: 0, count: function.digestCount)
        var length: UInt32 = 0
        precondition(
            EVP_DigestFinal_ex(context, &digest, &length) == 1 && Int(length) == function.digestCount, "EVP_DigestFinal_ex failed")
        reset()
        return digest
    }

    private func reset() {
        precondition(EVP_DigestInit_ex(context, function.evp, nil) == 1, "EVP_DigestInit_ex(\(function.name)) failed")
    }
}

/// A SHA-2 function (FIPS 180-4) that ``SHA2`` computes.
public enum SHA2Function: Sendable {
    case sha256, sha512

    /// Length of its digest in bytes.
    public var digestCount: Int {
        switch self {
        case .sha256: 32
        case .sha512: 64
        }
    }

    /// OpenSSL's description of the function.
    var evp: OpaquePointer? {
        switch self {
        case .sha256: EVP_sha256()
        case .sha512: EVP_sha512()
        }
    }

    var name: String {
        switch self {
        case .sha256: "SHA-256"
        case .sha512: "SHA-512"
        }
    }
}

/// Names the function of a ``SHA2`` hasher in its type.
public protocol SHA2Variant {
    static var function: SHA2Function { get }
}

/// SHA-256's variant.
public enum SHA256Variant: SHA2Variant { public static let function = SHA2Function.sha256 }
/// SHA-512's variant.
public enum SHA512Variant: SHA2Variant { public static let function = SHA2Function.sha512 }

/// SHA-256 over OpenSSL's EVP interface.
public typealias SHA256 = SHA2<SHA256Variant>
/// SHA-512 over OpenSSL's EVP interface, used as ``SHA256`` is.
public typealias SHA512 = SHA2<SHA512Variant>

/// A SHA-2 digest (``SHA256``, ``SHA512``) over OpenSSL's EVP interface.
///
/// Use `SHA256.hash(_:)` for bytes in memory, or create a hasher and feed it chunks with
/// `update(_:)` (for example a streamed download), then call `finalize()`.
/// A hasher is not thread-safe; it belongs to one owner at a time.
public final class SHA2<Variant: SHA2Variant> {
    /// Length of a digest in bytes (32 for SHA-256, 64 for SHA-512).
    public static var digestCount: Int { Variant.function.digestCount }

    private let hasher = EVPHasher(Variant.function)

    /// Creates an empty hasher. Traps only if OpenSSL cannot allocate a digest context.
    public init() {}

    /// The digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let hasher = SHA2()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Feeds more bytes into the digest. Any size, including empty.
    public func update(_ bytes: some Collection<UInt8>) { hasher.update(bytes) }

    /// Returns the digest of everything fed so far, then resets the hasher to empty so it can
    /// be reused.
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
