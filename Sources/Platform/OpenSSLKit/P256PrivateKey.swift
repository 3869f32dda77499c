internal import COpenSSL

/// An ECDSA private key on the NIST P-256 curve (OpenSSL `EVP_PKEY`): the per-install identity
/// that TLS servers present and clients pin by its `fingerprint`.
// @unchecked Sendable: the EVP_PKEY is never mutated after init, and OpenSSL 3 allows concurrent read-only use.
public final class P256PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    private init(taking pkey: OpaquePointer) {
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a fresh key from OpenSSL's DRBG. Throws `OpenSSLError.operationFailed` if
    /// OpenSSL cannot generate one.
    public static func generate() throws(OpenSSLError) -> P256PrivateKey {
        ERR_clear_error()
        guard let pkey = copenssl_ec_keygen("P-256") else {
            throw OpenSSLError.operationFailed.with("P-256 key generation failed")
        }
        return P256PrivateKey(taking: pkey)
    }

    /// Decodes a private key from PEM (PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY`).
    /// Throws `OpenSSLError.invalidPEM` for text that is not an unencrypted private-key PEM
    /// (encrypted keys are refused, never prompted for), and `.unsupportedKeyType` for a valid
    /// key that is not P-256 (RSA, Ed25519, other curves).
    public convenience init(pem: String) throws(OpenSSLError) {
        let pkey = try withReadBIO(pem) { bio throws(OpenSSLError) -> OpaquePointer in
            guard let pkey = PEM_read_bio_PrivateKey(bio, nil, refusePassword, nil) else {
                throw OpenSSLError.invalidPEM.with("text is not an unencrypted private key PEM")
            }
            return pkey
        }
        guard Self.isP256(pkey) else {
            EVP_PKEY_free(pkey)
            ERR_clear_error()
            throw OpenSSLError.unsupportedKeyType.with("key is not an EC P-256 key")
        }
        self.init(taking: pkey)
    }

    /// The key as an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). Secret: never log it.
    public var pemRepresentation: String {
        let bytes = try! collectBIO(secret: true, what: "PEM_write_bio_PrivateKey") { bio in
            PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The DER-encoded SubjectPublicKeyInfo of the public half (`i2d_PUBKEY`).
    public var subjectPublicKeyInfoDER: [UInt8] {
        try! encodeDER(what: "i2d_PUBKEY") { i2d_PUBKEY(pkey, $0) }
    }

    /// SHA-256 of `subjectPublicKeyInfoDER`: the value TLS clients pin.
    public var fingerprint: SPKIFingerprint {
        SPKIFingerprint(subjectPublicKeyInfoDER: subjectPublicKeyInfoDER)
    }

    private static func isP256(_ pkey: OpaquePointer) -> Bool {
        guard EVP_PKEY_is_a(pkey, "EC") == 1 else { return false }
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1 else { return false }
        let nid = OBJ_txt2nid(name)
        return nid == NID_X9_62_prime256v1
    }
}
