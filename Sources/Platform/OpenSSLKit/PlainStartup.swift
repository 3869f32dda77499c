internal import COpenSSL

/// OpenSSL's process-wide start-up, for a process that makes no TLS connection.
public enum OpenSSLStartup {
    /// Initialises OpenSSL without the start-up work only TLS and lookups by name use: reading
    /// the system's `openssl.cnf`, registering every cipher and digest under its name, and
    /// loading the error strings. OpenSSL runs each of these steps once per process, so a later
    /// initialisation (libcurl's `curl_global_init` included) finds them settled and skips them:
    /// about 0.8 ms of a plain-http `rastrillo-fetch` call (bench/fetch).
    ///
    /// Call it before anything else starts OpenSSL (``keepStateUntilExit()`` only may come
    /// first), and only in a process that will make no TLS connection at all: one made
    /// afterwards would run without the system's OpenSSL configuration. Digests built from their
    /// `EVP_` constructors (``SHA256``, ``HMACSHA256``) still work. Returns whether OpenSSL
    /// accepted the initialisation.
    @discardableResult
    public static func initializeWithoutTLS() -> Bool {
        let skipped =
            UInt64(OPENSSL_INIT_NO_LOAD_CONFIG) | UInt64(OPENSSL_INIT_NO_ADD_ALL_CIPHERS)
            | UInt64(OPENSSL_INIT_NO_ADD_ALL_DIGESTS) | UInt64(OPENSSL_INIT_NO_LOAD_SSL_STRINGS)
            | UInt64(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS)
        return OPENSSL_init_ssl(skipped, nil) == 1
    }

    /// Tells OpenSSL not to free its process-wide state when the process exits. By default
    /// OpenSSL registers an `atexit` handler that does, and a thread still finishing a
    /// connection at that moment (a stream's I/O thread sending close_notify after `close()`
    /// returned) then frees what the handler freed: glibc reports "double free or corruption"
    /// and may abort the exiting process. Without the handler the kernel reclaims the memory.
    ///
    /// Takes effect only as OpenSSL's first initialisation in the process, so every tool calls
    /// it first thing in `main`, before anything else can start OpenSSL. Returns whether
    /// OpenSSL accepted it.
    @discardableResult
    public static func keepStateUntilExit() -> Bool {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }
}
