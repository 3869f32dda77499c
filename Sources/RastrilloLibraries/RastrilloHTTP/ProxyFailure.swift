import ByteText
import CurlKit
import RastrilloCore

/// The failures of an exchange through a proxy, each naming the proxy in its redacted form.
package enum ProxyFailure {
    /// `error` with `(via proxy http://host:port)` appended, unless its message already names
    /// the proxy.
    package static func naming(_ proxy: ProxyRoute, in error: NativeClientError) -> NativeClientError {
        error.message.containsText("proxy") ? error : error.with(error.message + " (via proxy \(proxy), from \(proxy.source))")
    }

    /// 407 from the proxy: its credential is missing or refused. Retry class `auth`, status 407.
    package static func authenticationRequired(_ proxy: ProxyRoute) -> NativeClientError {
        let what =
            proxy.username == nil
            ? "the proxy \(proxy) (from \(proxy.source)) requires a credential: put user:password in its URL"
            : "the proxy \(proxy) (from \(proxy.source)) refused its credential"
        return NativeClientError(.unauthorized, "\(what) (407 Proxy Authentication Required)", status: 407)
    }

    /// The proxy's reply to `CONNECT` was a status other than 2xx: 407 is `auth`; a 5xx (the
    /// proxy could not reach the origin) is a `transport` failure; any other status is
    /// `rejected` (the proxy's policy refuses the origin).
    static func connectRefused(status: Int, proxy: ProxyRoute, origin: NativeOrigin) -> NativeClientError {
        if status == 407 { return authenticationRequired(proxy) }
        let what = "the proxy \(proxy) (from \(proxy.source)) answered CONNECT \(origin.authority) with status \(status)"
        if (500...599).contains(status) {
            return NativeClientError(.transport(.cannotConnectToHost), "transport failure: \(what)", status: status)
        }
        return NativeClientError(.rejected(status), "\(what): it will not open a tunnel there", status: status, body: [])
    }

    /// The case for `error`, a failure of an exchange with `origin` through `proxy`, or nil
    /// when the failure is the origin's (the tunnel or the proxied exchange was under way).
    static func classify(_ error: CurlError, proxy: ProxyRoute, origin: NativeOrigin, tunnel: Bool)
        -> NativeClientError?
    {
        let via = "the proxy \(proxy) (from \(proxy.source))"
        if let status = error.proxyConnectStatus, !(200...299).contains(status) {
            return connectRefused(status: status, proxy: proxy, origin: origin)
        }
        switch error {
        case .couldNotConnect:
            return NativeClientError.offline(.cannotConnectToHost).with(
                "offline: cannot connect to \(via): \(error.detail ?? "the connection was refused")")
        case .couldNotResolveProxy:
            return NativeClientError.offline(.dnsLookupFailed).with(
                "offline: the host name of \(via) did not resolve")
        default:
            break
        }
        // A tunnel that never opened: the proxy's reply to CONNECT was not HTTP, or it closed
        // the connection without one.
        guard tunnel, error.proxyConnectStatus == nil else { return nil }
        let notTheProxys: [CurlError] = [
            .operationTimedOut, .stalled, .aborted(""), .bodySourceFailed, .invalidURL, .invalidMethod, .invalidHeader,
            .invalidRequest, .setupFailed, .couldNotResolveHost,
        ]
        guard !notTheProxys.contains(error) else { return nil }
        let detail = error.detail.map { ": \($0)" } ?? ""
        return NativeClientError.transport(.badServerResponse).with(
            "transport failure: \(via) sent no valid reply to CONNECT \(origin.authority)\(detail)")
    }
}
