import CurlKit
import FoundationEssentials
import Glibc
import RastrilloCore
import SystemKit
import ThreadSupport

/// Turns libcurl's failures into `NativeClientError` cases.
enum TransportFailure {
    /// The case for `error`, a failure of an exchange with `origin`. A failure to resolve or to
    /// connect is probed once more to tell its kind apart (see ``Probe``), off the cooperative
    /// thread pool since resolution may block.
    /// `probing` false skips the probe (through a proxy, the origin's own route says nothing).
    static func map(_ error: CurlError, origin: NativeOrigin, probing: Bool = true) async -> NativeClientError {
        var probe: Probe.Outcome?
        if !probing {
        } else if error == .couldNotResolveHost {
            probe = await Probe.offThePool { Probe.resolve(origin.host) }
        } else if error == .couldNotConnect {
            probe = await Probe.offThePool { Probe.route(to: origin) }
        }
        return classify(error, probe: probe, origin: origin)
    }

    /// The pure mapping, given what a probe found (nil when none ran).
    static func classify(_ error: CurlError, probe: Probe.Outcome?, origin: NativeOrigin) -> NativeClientError {
        let base: NativeClientError
        switch error {
        case .invalidURL, .invalidMethod, .invalidHeader, .invalidRequest:
            return NativeClientError.invalidRequest.with(error.message)
        case .bodySourceFailed:
            return NativeClientError.requestBodyFailed.with("the request body could not be sent: \(error.message)")
        case _ where error.isProtocolViolation:
            return NativeClientError.invalidResponse.with("the server broke HTTP (\(origin.authority)): \(error.message)")
        case .stalled:
            return NativeClientError.transport(.stalled).with("transport failure: \(error.message) (\(origin.authority))")
        case .couldNotResolveHost:
            base = probe == .hostDoesNotExist ? .offline(.cannotFindHost) : .offline(.dnsLookupFailed)
        case .couldNotResolveProxy:
            base = .offline(.dnsLookupFailed)
        case .couldNotConnect:
            base = probe == .noRoute ? .offline(.notConnectedToInternet) : .offline(.cannotConnectToHost)
        case .operationTimedOut:
            base = .offline(.timedOut)
        case .sendFailed, .receiveFailed, .partialBody, .emptyReply:
            base = .offline(.networkConnectionLost)
        case .badContentEncoding:
            base = .transport(.cannotDecodeContentData)
        case .tlsPeerCertificateRejected:
            base = .transport(.serverCertificateUntrusted)
        case .tlsHandshakeFailed, .tlsCACertificateUnusable, .tlsPinnedKeyMismatch:
            base = .transport(.secureConnectionFailed)
        default:
            base = .transport(.other)
        }
        let kind = base.retryClass == .offline ? "offline" : "transport failure"
        return base.with("\(kind): \(sentence(error, code: base.networkCode ?? .other, origin: origin))")
    }

    /// What failed, said once: the failure in our words, then libcurl's detail for this
    /// transfer only where it adds something (which TLS check failed, how the connection broke).
    /// libcurl's generic text for its code is never used: it repeats the cause, and for
    /// CURLE_PEER_FAILED_VERIFICATION it speaks of an "SSH remote key".
    static func sentence(_ error: CurlError, code: NativeNetworkCode, origin: NativeOrigin) -> String {
        let authority = origin.authority
        var detail = error.detail.flatMap { $0.isEmpty ? nil : $0 }
        let what: String
        switch code {
        case .cannotConnectToHost: (what, detail) = ("cannot connect to \(authority)", nil)
        case .notConnectedToInternet: (what, detail) = ("no route to \(authority)", nil)
        case .cannotFindHost: (what, detail) = ("the host name \(origin.host) does not exist", nil)
        case .dnsLookupFailed:
            what = error == .couldNotResolveProxy ? "the proxy's host name did not resolve" : "cannot resolve \(origin.host)"
            detail = nil
        case .timedOut: (what, detail) = ("the exchange with \(authority) timed out", nil)
        case .networkConnectionLost: what = "the connection to \(authority) was lost"
        case .badServerResponse: what = "the reply of \(authority) is not valid HTTP"
        case .cannotDecodeContentData: what = "the response body from \(authority) did not decode"
        case .serverCertificateUntrusted:
            let problem = detail.map { text in
                text.hasPrefix(Self.certificateProblem) ? String(text.dropFirst(Self.certificateProblem.count)) : text
            }
            return "the server's certificate is not trusted: \(problem ?? "verification failed") (\(authority))"
        case .secureConnectionFailed: what = "the TLS connection to \(authority) failed"
        default:
            what = "the exchange with \(authority) failed"
            if detail == nil, let description = error.curlDescription, error.curlCode != 60 { detail = description }
        }
        return detail.map { "\(what): \($0)" } ?? what
    }

    /// How libcurl (with OpenSSL) opens a certificate verification failure's detail.
    private static let certificateProblem = "SSL certificate problem: "
}

/// Second looks at a failed resolution or connection, to name the failure precisely: libcurl
/// reports both "no such host" and "no resolver answered" as one code, and both "refused" and
/// "no route" as another.
enum Probe {
    enum Outcome: Equatable {
        /// The resolver answered that the name does not exist (`EAI_NONAME`, `EAI_NODATA`).
        case hostDoesNotExist
        /// Resolution failed for another reason (`EAI_AGAIN`, `EAI_FAIL`, ...), or succeeded now.
        case resolverFailed
        /// No address of the host has a route from here (`ENETUNREACH`, `EHOSTUNREACH`), or no
        /// local address to reach it from (`EADDRNOTAVAIL`: the network is not configured).
        case noRoute
        /// Some address has a route: the host itself did not accept the connection.
        case routed
    }

    /// Resolves `host` once more with the system resolver and says how it failed.
    static func resolve(_ host: String) -> Outcome {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, nil, &hints, &result)
        if let result { freeaddrinfo(result) }
        // EAI_NODATA (-5) is a GNU extension Glibc's module does not export.
        return code == EAI_NONAME || code == -5 ? .hostDoesNotExist : .resolverFailed
    }

    /// Whether any address of `origin` has a route: a UDP socket's `connect(2)` looks the route
    /// up and sends nothing.
    static func route(to origin: NativeOrigin) -> Outcome {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(origin.host, String(origin.port), &hints, &result) == 0, let first = result else {
            return .routed
        }
        defer { freeaddrinfo(first) }
        var sawNoRoute = false
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            guard let socket = try? FileDescriptor.socket(family: current.pointee.ai_family, type: Int32(SOCK_DGRAM.rawValue)) else {
                continue
            }
            defer { socket.close() }
            let address = UnsafeRawBufferPointer(start: current.pointee.ai_addr, count: Int(current.pointee.ai_addrlen))
            guard let failed = FileDescriptor.connect(socket.rawValue, to: address) else { return .routed }
            if [ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL].contains(failed) { sawNoRoute = true }
        }
        return sawNoRoute ? .noRoute : .routed
    }

    /// Runs a blocking probe on its own thread, so a slow resolver holds no cooperative thread
    /// (on the calling thread when no thread can be had, rather than not at all).
    static func offThePool(_ probe: @escaping @Sendable () -> Outcome) async -> Outcome {
        await DetachedThread.run(name: "rastrillo.probe") { probe() }
    }
}
