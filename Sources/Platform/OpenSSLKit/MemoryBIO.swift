internal import COpenSSL

/// Runs `body` with a read-only memory BIO over the UTF-8 bytes of `text`.
func withReadBIO<R>(_ text: String, _ body: (OpaquePointer) throws(OpenSSLError) -> R) throws(OpenSSLError) -> R {
    var bytes = Array(text.utf8)
    defer { wipe(&bytes) }
    return try withReadBIO(bytes: bytes, body)
}

/// Runs `body` with a read-only memory BIO over `bytes`.
/// OpenSSL's error queue is empty when `body` starts and when this returns: decoders may queue
/// errors even when they succeed, and those must not reach a later, unrelated error message.
func withReadBIO<R>(bytes: [UInt8], _ body: (OpaquePointer) throws(OpenSSLError) -> R) throws(OpenSSLError) -> R {
    ERR_clear_error()
    defer { ERR_clear_error() }
    let result: Result<R, OpenSSLError> = bytes.withUnsafeBytes { buffer in
        let emptyByte: UInt8 = 0
        return withUnsafeBytes(of: emptyByte) { empty in
            let base = buffer.count > 0 ? buffer.baseAddress! : empty.baseAddress!
            guard let bio = BIO_new_mem_buf(base, Int32(buffer.count)) else {
                return .failure(OpenSSLError.operationFailed.with("BIO_new_mem_buf failed"))
            }
            defer { BIO_free(bio) }
            do throws(OpenSSLError) { return .success(try body(bio)) } catch { return .failure(error) }
        }
    }
    return try result.get()
}

/// Runs `write` against a fresh memory BIO and returns everything it wrote. `secret` uses
/// OpenSSL's secure-memory BIO, which wipes its buffer when freed.
func collectBIO(secret: Bool = false, what: String, _ write: (OpaquePointer) -> Bool) throws(OpenSSLError) -> [UInt8] {
    guard let bio = BIO_new(secret ? BIO_s_secmem() : BIO_s_mem()) else {
        throw OpenSSLError.operationFailed.with("BIO_new failed")
    }
    defer { BIO_free(bio) }
    guard write(bio) else { throw OpenSSLError.operationFailed.with(what) }
    let pending = Int(BIO_ctrl_pending(bio))
    var out = [UInt8](repeating: 0, count: pending)
    let read = out.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(pending)) }
    guard read == pending else { throw OpenSSLError.operationFailed.with("\(what): short read from memory BIO") }
    return out
}

/// Encodes with an OpenSSL `i2d_*` function: one call for the length, one to fill the buffer.
func encodeDER(what: String, _ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws(OpenSSLError) -> [UInt8] {
    let length = encode(nil)
    guard length > 0 else { throw OpenSSLError.operationFailed.with(what) }
    var der = [UInt8](repeating: 0, count: Int(length))
    let written = der.withUnsafeMutableBufferPointer { buffer in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return encode(&cursor)
    }
    guard written == length else { throw OpenSSLError.operationFailed.with(what) }
    return der
}

/// A PEM password callback that never supplies a password, so an encrypted PEM fails to decode
/// instead of OpenSSL prompting on the terminal.
func refusePassword(_: UnsafeMutablePointer<CChar>?, _: Int32, _: Int32, _: UnsafeMutableRawPointer?) -> Int32 { -1 }

/// Overwrites a buffer that held key material before it is released.
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
    }
}
