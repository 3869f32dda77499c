internal import COpenSSL

/// Creates an `SSL_CTX` that speaks TLS 1.3 only, with partial writes enabled (a write loop
/// feeds it), read-ahead, and no session tickets (nothing is resumed; every handshake verifies
/// the peer); a server's connections release their buffers while idle.
private func makeTLS13Context(server: Bool) throws(OpenSSLError) -> OpaquePointer {
    ERR_clear_error()
    guard let ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
        throw OpenSSLError.operationFailed.with("SSL_CTX_new failed")
    }
    guard copenssl_ssl_ctx_set_min_proto_version(ctx, TLS1_3_VERSION) == 1,
          copenssl_ssl_ctx_set_max_proto_version(ctx, TLS1_3_VERSION) == 1,
          SSL_CTX_set_num_tickets(ctx, 0) == 1
    else {
        SSL_CTX_free(ctx)
        throw OpenSSLError.operationFailed.with("configuring the TLS 1.3 context failed")
    }
    var mode = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
    // A server holds many idle connections: their read and write buffers (about 34 KiB each)
    // go back to the allocator whenever they are empty, and are taken again per record.
    if server { mode |= SSL_MODE_RELEASE_BUFFERS }
    _ = copenssl_ssl_ctx_set_mode(ctx, Int(mode))
    // Read ahead: one recv(2) takes a record's header and body (and whatever follows), where
    // OpenSSL would otherwise read the 5-byte header and the body apart. What it reads stays in
    // the connection's buffer (`hasBufferedBytes`).
    _ = SSL_CTX_ctrl(ctx, SSL_CTRL_SET_READ_AHEAD, 1, nil)
    return ctx
}

/// Server-side TLS 1.3 settings: the identity (key and certificate) every accepted connection
/// presents. Clients are not asked for certificates.
// @unchecked Sendable: the SSL_CTX is configured once in init and only read afterwards (SSL_new), which OpenSSL allows from any thread.
public final class TLSServerContext: @unchecked Sendable {
    let ctx: OpaquePointer
    /// The private key presented by connections made from this context.
    public let key: P256PrivateKey
    /// The certificate presented by connections made from this context.
    public let certificate: SelfSignedCertificate

    /// Throws `OpenSSLError.keyMismatch` if `certificate` is not for `key`, and
    /// `.operationFailed` if OpenSSL cannot build the context.
    public init(key: P256PrivateKey, certificate: SelfSignedCertificate) throws(OpenSSLError) {
        ERR_clear_error()
        guard X509_check_private_key(certificate.x509, key.pkey) == 1 else {
            throw OpenSSLError.keyMismatch.with("the certificate's public key does not belong to the private key")
        }
        let ctx = try makeTLS13Context(server: true)
        guard SSL_CTX_use_certificate(ctx, certificate.x509) == 1,
              SSL_CTX_use_PrivateKey(ctx, key.pkey) == 1
        else {
            SSL_CTX_free(ctx)
            throw OpenSSLError.operationFailed.with("installing the server key and certificate failed")
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        self.ctx = ctx
        self.key = key
        self.certificate = certificate
    }

    deinit { SSL_CTX_free(ctx) }
}

/// Client-side TLS 1.3 settings. There is no CA: the server is judged only by the SHA-256 of
/// its leaf certificate's SubjectPublicKeyInfo DER, checked during the handshake.
// @unchecked Sendable: the SSL_CTX is configured once in init and only read afterwards (SSL_new), which OpenSSL allows from any thread.
public final class TLSClientContext: @unchecked Sendable {
    /// How the client decides whether to trust the server.
    public enum Verification: Equatable, Sendable {
        /// Accept the server if and only if its SPKI fingerprint equals this one (constant-time
        /// comparison). On mismatch the handshake aborts with `TLSError.pinMismatch` before any
        /// application data is sent.
        case pinned(SPKIFingerprint)
        /// Accept any server and record its fingerprint in `TLSConnection.peerFingerprint`.
        /// For pairing only, where the fingerprint is then confirmed out of band.
        case unpinnedRecordingFingerprint
    }

    let ctx: OpaquePointer
    /// The verification every connection from this context applies.
    public let verification: Verification
    private let box: VerificationBox

    /// Throws `OpenSSLError.operationFailed` if OpenSSL cannot build the context.
    public init(verification: Verification) throws(OpenSSLError) {
        let ctx = try makeTLS13Context(server: false)
        let box = VerificationBox(verification)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        SSL_CTX_set_cert_verify_callback(ctx, verifyServerCertificate, Unmanaged.passUnretained(box).toOpaque())
        self.ctx = ctx
        self.verification = verification
        self.box = box
    }

    deinit { SSL_CTX_free(ctx) }
}

/// The verification policy handed to OpenSSL's callback as its opaque argument; the client
/// context keeps it alive, and every connection keeps its context alive.
private final class VerificationBox: Sendable {
    let pin: SPKIFingerprint?
    init(_ verification: TLSClientContext.Verification) {
        switch verification {
        case .pinned(let fingerprint): pin = fingerprint
        case .unpinnedRecordingFingerprint: pin = nil
        }
    }
}

/// Replaces OpenSSL's chain verification: called once per handshake with the server's chain.
/// Returns 1 to continue, 0 to abort (OpenSSL then sends an alert and fails the handshake).
private func verifyServerCertificate(_ store: OpaquePointer?, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let store, let argument else { return 0 }
    let box = Unmanaged<VerificationBox>.fromOpaque(argument).takeUnretainedValue()
    guard let leaf = X509_STORE_CTX_get0_cert(store),
          let fingerprint = spkiFingerprint(ofCertificate: leaf)
    else {
        X509_STORE_CTX_set_error(store, X509_V_ERR_UNSPECIFIED)
        return 0
    }
    guard let pin = box.pin else { return 1 }
    guard constantTimeEqual(fingerprint.bytes, pin.bytes) else {
        X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION)
        return 0
    }
    return 1
}

/// SHA-256 of the certificate's SubjectPublicKeyInfo DER, exactly as encoded in the certificate.
func spkiFingerprint(ofCertificate x509: OpaquePointer) -> SPKIFingerprint? {
    guard let der = try? encodeDER(what: "i2d_X509_PUBKEY", { i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x509), $0) }) else {
        return nil
    }
    return SPKIFingerprint(subjectPublicKeyInfoDER: der)
}
