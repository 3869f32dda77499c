internal import COpenSSL
import FoundationEssentials
import SystemKit
import Timekeeping

/// An X.509 certificate (OpenSSL `X509`), normally one this install signs for its own
/// `P256PrivateKey` so a TLS server has something to present. Clients never check it against a
/// CA: they pin the SHA-256 of its SubjectPublicKeyInfo, which equals the key's `fingerprint`.
// @unchecked Sendable: the X509 is never mutated after init, and OpenSSL 3 guards its lazily computed caches with a lock.
public final class SelfSignedCertificate: @unchecked Sendable {
    let x509: OpaquePointer

    private init(taking x509: OpaquePointer) {
        self.x509 = x509
    }

    deinit { X509_free(x509) }

    /// Creates and signs (ECDSA with SHA-256) an X.509 v3 certificate for `key`: subject and
    /// issuer are `CN=commonName`, the serial is 16 bytes, positive, with 126 random bits, valid from `notValidBefore` to
    /// `notValidAfter` (second precision), with a critical `basicConstraints CA:FALSE`.
    /// Defaults: valid from one hour ago (clock skew) for ten years (3650 days).
    /// Throws `OpenSSLError.operationFailed` if the name is empty or not encodable (longer than
    /// 64 characters) or the window is inverted, or OpenSSL fails to build or sign.
    public convenience init(
        key: P256PrivateKey, commonName: String,
        notValidBefore: Date = Date(timeIntervalSince1970: SystemClock().wallClockNow.seconds - 3600),
        notValidAfter: Date = Date(timeIntervalSince1970: SystemClock().wallClockNow.seconds + 3650 * 86400)
    ) throws(OpenSSLError) {
        guard !commonName.isEmpty, commonName.utf8.count <= 64 else {
            throw OpenSSLError.operationFailed.with("certificate common name must be 1...64 bytes of UTF-8, got \(commonName.utf8.count)")
        }
        guard notValidBefore < notValidAfter else {
            throw OpenSSLError.operationFailed.with("certificate validity window is empty: notValidBefore is not before notValidAfter")
        }
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard let x509 = X509_new() else { throw OpenSSLError.operationFailed.with("X509_new failed") }
        self.init(taking: x509)

        var serialBytes = try SecureRandom.bytes(16)
        serialBytes[0] &= 0x7F  // positive
        serialBytes[0] |= 0x40  // never shorter than 16 bytes, never zero
        guard let serial = BN_bin2bn(serialBytes, Int32(serialBytes.count), nil) else {
            throw OpenSSLError.operationFailed.with("BN_bin2bn failed")
        }
        defer { BN_free(serial) }
        guard X509_set_version(x509, 2) == 1,
              BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x509)) != nil
        else { throw OpenSSLError.operationFailed.with("setting certificate version and serial failed") }

        guard ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notValidBefore.timeIntervalSince1970.rounded(.down))) != nil,
              ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notValidAfter.timeIntervalSince1970.rounded(.down))) != nil
        else { throw OpenSSLError.operationFailed.with("setting certificate validity failed") }

        guard let name = X509_get_subject_name(x509),
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1,
              X509_set_issuer_name(x509, name) == 1
        else { throw OpenSSLError.operationFailed.with("setting certificate subject CN failed") }

        guard X509_set_pubkey(x509, key.pkey) == 1 else {
            throw OpenSSLError.operationFailed.with("X509_set_pubkey failed")
        }

        var v3 = X509V3_CTX()
        X509V3_set_ctx(&v3, x509, x509, nil, nil, 0)
        guard let constraints = X509V3_EXT_conf_nid(nil, &v3, NID_basic_constraints, "critical,CA:FALSE") else {
            throw OpenSSLError.operationFailed.with("building basicConstraints failed")
        }
        defer { X509_EXTENSION_free(constraints) }
        guard X509_add_ext(x509, constraints, -1) == 1 else {
            throw OpenSSLError.operationFailed.with("adding basicConstraints failed")
        }

        guard X509_sign(x509, key.pkey, EVP_sha256()) > 0 else {
            throw OpenSSLError.operationFailed.with("signing the certificate failed")
        }
    }

    /// Decodes one PEM `CERTIFICATE` block. Throws `OpenSSLError.invalidPEM` for anything else.
    public convenience init(pem: String) throws(OpenSSLError) {
        let x509 = try withReadBIO(pem) { bio throws(OpenSSLError) -> OpaquePointer in
            guard let x509 = PEM_read_bio_X509(bio, nil, refusePassword, nil) else {
                throw OpenSSLError.invalidPEM.with("text is not a PEM certificate")
            }
            return x509
        }
        self.init(taking: x509)
    }

    /// Decodes a DER certificate; trailing bytes are refused. Throws `OpenSSLError.invalidDER`.
    public convenience init(der: [UInt8]) throws(OpenSSLError) {
        let decoded: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let x509 = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            guard cursor == buffer.baseAddress.map({ $0 + buffer.count }) else {
                X509_free(x509)
                return nil
            }
            return x509
        }
        guard let decoded else { throw OpenSSLError.invalidDER.with("bytes are not exactly one DER certificate") }
        self.init(taking: decoded)
    }

    /// Wraps a certificate OpenSSL handed us, taking one new reference.
    init(retaining x509: OpaquePointer) {
        X509_up_ref(x509)
        self.x509 = x509
    }

    /// The certificate in DER.
    public var derRepresentation: [UInt8] {
        try! encodeDER(what: "i2d_X509") { i2d_X509(x509, $0) }
    }

    /// The certificate as one PEM `CERTIFICATE` block.
    public var pemRepresentation: String {
        String(decoding: try! collectBIO(what: "PEM_write_bio_X509") { PEM_write_bio_X509($0, x509) == 1 }, as: UTF8.self)
    }

    /// The DER SubjectPublicKeyInfo exactly as it appears inside the certificate.
    public var subjectPublicKeyInfoDER: [UInt8] {
        try! encodeDER(what: "i2d_X509_PUBKEY") { i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x509), $0) }
    }

    /// SHA-256 of `subjectPublicKeyInfoDER`; equals the signing key's `fingerprint`.
    public var fingerprint: SPKIFingerprint {
        SPKIFingerprint(subjectPublicKeyInfoDER: subjectPublicKeyInfoDER)
    }

    /// The subject's common name, or `nil` if the subject has none.
    public var commonName: String? {
        guard let name = X509_get_subject_name(x509) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_commonName, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
              let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { copenssl_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// Start of the validity window.
    public var notValidBefore: Date { Self.date(X509_getm_notBefore(x509)) }

    /// End of the validity window.
    public var notValidAfter: Date { Self.date(X509_getm_notAfter(x509)) }

    /// The serial number as big-endian bytes.
    public var serialNumber: [UInt8] {
        guard let bn = ASN1_INTEGER_to_BN(X509_get_serialNumber(x509), nil) else { return [] }
        defer { BN_free(bn) }
        var out = [UInt8](repeating: 0, count: Int((BN_num_bits(bn) + 7) / 8))
        _ = BN_bn2bin(bn, &out)
        return out
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return Date(timeIntervalSince1970: 0) }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
