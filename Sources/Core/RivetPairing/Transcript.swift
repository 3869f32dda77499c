import ByteText
import OpenSSLKit

/// The client's commitment to its nonce, sent in `PairBegin` before the server draws `Ns`:
/// `SHA-256("rivet-pair-commit-v1" ‖ u32be(32) ‖ Nc)`.
public struct RivetDevicePairingCommitment: Hashable, Sendable, HexDescribedBytes {
    /// The ASCII domain-separation label that starts the committed bytes.
    public static let domain = "rivet-pair-commit-v1"
    /// The number of bytes in a commitment (32).
    public static let byteCount = 32

    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// The commitment to `nonce`.
    public init(to nonce: Nonce) {
        var input = Array(Self.domain.utf8)
        appendLengthPrefixed(nonce.bytes, to: &input)
        bytes = SHA256.hash(input)
    }

    /// Wraps exactly 32 bytes received from a peer; `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// True if this is the commitment to `nonce`; the digests are compared in constant time.
    public func opens(to nonce: Nonce) -> Bool {
        constantTimeEqual(bytes, RivetDevicePairingCommitment(to: nonce).bytes)
    }
}

/// The pairing transcript: the bytes both peers hash into the six-digit confirmation code.
///
/// ```
/// input  = "rivet-pairing-code-v1"
///        ‖ u32be(len(appID)) ‖ appID        (UTF-8, 1–255 bytes)
///        ‖ u32be(32) ‖ fingerprint          (SHA-256 of the server's SPKI DER)
///        ‖ u32be(32) ‖ Nc
///        ‖ u32be(32) ‖ Ns
/// digest = SHA-256(input)
/// code   = u64be(digest[0..<8]) mod 1 000 000
/// ```
/// The client computes it over the fingerprint it saw in the TLS handshake, the server over its
/// own; an intermediary with another key makes the two codes differ.
public struct RivetDevicePairingTranscript: Sendable, Equatable {
    /// The ASCII domain-separation label that starts the transcript.
    public static let domain = "rivet-pairing-code-v1"

    /// The application the device pairs with.
    public let applicationID: RivetApplicationID
    /// The server's SPKI fingerprint as this side knows it (`F` on the server, `F_seen` on the
    /// client).
    public let serverFingerprint: SPKIFingerprint
    /// The client's nonce `Nc`.
    public let clientNonce: Nonce
    /// The server's nonce `Ns`.
    public let serverNonce: Nonce

    /// Gathers the transcript's four inputs.
    public init(
        applicationID: RivetApplicationID, serverFingerprint: SPKIFingerprint, clientNonce: Nonce,
        serverNonce: Nonce
    ) {
        self.applicationID = applicationID
        self.serverFingerprint = serverFingerprint
        self.clientNonce = clientNonce
        self.serverNonce = serverNonce
    }

    /// The exact bytes hashed: domain label, then each field with its 4-byte big-endian length.
    public var encoded: [UInt8] {
        var input = Array(Self.domain.utf8)
        appendLengthPrefixed(Array(applicationID.value.utf8), to: &input)
        appendLengthPrefixed(serverFingerprint.bytes, to: &input)
        appendLengthPrefixed(clientNonce.bytes, to: &input)
        appendLengthPrefixed(serverNonce.bytes, to: &input)
        return input
    }

    /// `SHA-256(encoded)`.
    public var digest: [UInt8] { SHA256.hash(encoded) }

    /// The first eight digest bytes as a big-endian integer, modulo 1 000 000.
    public var code: ConfirmationCode {
        let prefix = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return ConfirmationCode(value: UInt32(prefix % 1_000_000))!
    }
}

/// Appends `u32be(bytes.count) ‖ bytes`.
func appendLengthPrefixed(_ bytes: [UInt8], to output: inout [UInt8]) {
    let count = UInt32(bytes.count)
    output += [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
    output += bytes
}
