import OpenSSLKit

extension NativeHTTP {
    /// For a process whose only traffic is requests to this client's origin (the HTTP tools): when
    /// the origin is plain `http`, initialises OpenSSL without the start-up work only TLS uses
    /// (`OpenSSLStartup.initializeWithoutTLS()`), which libcurl would otherwise do before the
    /// first transfer. A client never follows a redirect or uses a proxy, so its requests to an
    /// `http` origin never make a TLS connection. Does nothing for an `https` origin.
    ///
    /// Call it before the first request, and never in a process that may also make a TLS
    /// connection some other way: that one would run without the system's OpenSSL
    /// configuration.
    public func skipTLSStartupIfPlain() {
        if origin.scheme == "http" { OpenSSLStartup.initializeWithoutTLS() }
    }
}
