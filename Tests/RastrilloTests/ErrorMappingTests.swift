import CurlKit
import Foundation
import Testing

import Rastrillo
@testable import RastrilloHTTP

@Suite struct ErrorMappingTests {
    let received = Date(timeIntervalSince1970: 784_111_777)

    func response(_ status: Int, headers: [String: String] = [:], body: [UInt8] = []) throws -> NativeResponse {
        NativeResponse(
            status: status,
            headers: NativeHeaders(try headers.map { try NativeHeaderField(name: $0.key, value: $0.value) }),
            body: body, receivedAt: received)
    }

    @Test(arguments: [200, 201, 204, 206, 299])
    func successIsNoError(status: Int) throws {
        let response = try response(status, body: bytes("ok"))
        #expect(response.isSuccess)
        #expect(response.error == nil)
        #expect(try response.requireSuccess().body == bytes("ok"))
    }

    @Test func everyStatusCase() throws {
        let table: [(Int, [String: String], NativeClientError, NativeRetryClass)] = [
            (401, [:], .unauthorized, .auth),
            (303, ["Location": "/login"], .unauthorized, .auth),
            (403, [:], .forbidden, .auth),
            (404, [:], .notFound, .permanent),
            (409, [:], .conflict([]), .conflict),
            (413, [:], .tooLarge, .permanent),
            (429, [:], .rateLimited(retryAfter: nil), .transient),
            (503, ["Retry-After": "5"], .rateLimited(retryAfter: nil), .transient),
            (503, [:], .server(status: 503), .transient),
            (500, [:], .server(status: 500), .transient),
            (599, [:], .server(status: 599), .transient),
            (302, ["Location": "http://elsewhere.test/"], .rejected(status: 302, body: []), .permanent),
            (301, [:], .rejected(status: 301, body: []), .permanent),
            (400, [:], .rejected(status: 400, body: []), .permanent),
            (418, [:], .rejected(status: 418, body: []), .permanent),
            (101, [:], .rejected(status: 101, body: []), .permanent),
        ]
        for (status, headers, expected, retryClass) in table {
            let error = try #require(try response(status, headers: headers).error, "status \(status)")
            #expect(error == expected, "status \(status)")
            #expect(error.retryClass == retryClass, "status \(status)")
            #expect(error.status == status, "status \(status)")
            #expect(throws: expected) { try response(status, headers: headers).requireSuccess() }
        }
    }

    @Test func serverAndRejectedCompareTheirStatus() {
        #expect(NativeClientError.server(status: 500) != .server(status: 502))
        #expect(NativeClientError.rejected(status: 400, body: []) != .rejected(status: 418, body: []))
        #expect(NativeClientError.rejected(status: 400, body: bytes("a")) == .rejected(status: 400, body: bytes("b")))
        #expect(NativeClientError.offline(.timedOut) != .offline(.cannotConnectToHost))
        #expect(NativeClientError.offline(.timedOut) != .transport(.timedOut))
    }

    @Test func conflictAndRejectedKeepTheBody() throws {
        let conflict = try #require(try response(409, body: bytes("version 7 is current\nmore")).error)
        #expect(conflict.body == bytes("version 7 is current\nmore"))
        #expect(conflict.message.contains("version 7 is current"))
        #expect(!conflict.message.contains("more"))
        let rejected = try #require(try response(422, body: bytes("bad field")).error)
        #expect(rejected.body == bytes("bad field"))
        #expect(rejected.name == "rejected")
    }

    @Test func redirectsNameTheirLocationAndSayItIsNotFollowed() throws {
        let redirect = try #require(try response(302, headers: ["location": "http://other.test/x"]).error)
        #expect(redirect.message.contains("http://other.test/x"))
        #expect(redirect.message.contains("never followed"))
        let signIn = try #require(try response(303, headers: ["Location": "/login"]).error)
        #expect(signIn.message.contains("/login"))
        #expect(signIn.name == "unauthorized")
    }

    @Test func retryAfterInBothForms() throws {
        let delta = try #require(try response(429, headers: ["Retry-After": "42"]).error)
        #expect(delta.retryAfter == .seconds(42))
        let date = try #require(try response(503, headers: ["retry-after": "Sun, 06 Nov 1994 08:50:07 GMT"]).error)
        #expect(date == .rateLimited(retryAfter: nil))
        #expect(date.retryAfter == .seconds(30))
        #expect(date.status == 503)
        let garbage = try #require(try response(429, headers: ["Retry-After": "later"]).error)
        #expect(garbage.retryAfter == nil)
        let clamped = try #require(try response(429, headers: ["Retry-After": "86400"]).error)
        #expect(clamped.retryAfter == .seconds(300))
        // The seed: 503 is rate limiting only with a Retry-After. One that is neither
        // delta-seconds nor an HTTP-date is none, so the 503 is a server failure (transient);
        // a date in the past is a valid Retry-After asking for no wait.
        for invalid in ["never", "", "-5", "1.5", "Sun, 06 Nov 1994"] {
            let unusable = try #require(try response(503, headers: ["Retry-After": invalid]).error)
            #expect(unusable == .server(status: 503), "\(invalid)")
            #expect(unusable.name == "server")
            #expect(unusable.retryClass == .transient)
        }
        let past = try #require(try response(503, headers: ["Retry-After": "Sun, 06 Nov 1994 08:40:00 GMT"]).error)
        #expect(past == .rateLimited(retryAfter: nil))
        #expect(past.retryAfter == nil)
        #expect(try response(429, headers: ["Retry-After": "never"]).error == .rateLimited(retryAfter: nil))
    }

    @Test func everyCaseHasARetryClassAndAName() {
        let cases: [(NativeClientError, NativeRetryClass, String)] = [
            (.offline(.notConnectedToInternet), .offline, "offline"),
            (.offline(.networkConnectionLost), .offline, "offline"),
            (.offline(.cannotFindHost), .offline, "offline"),
            (.offline(.cannotConnectToHost), .offline, "offline"),
            (.offline(.dnsLookupFailed), .offline, "offline"),
            (.offline(.timedOut), .offline, "offline"),
            (.transport(.secureConnectionFailed), .transient, "transport"),
            (.transport(.serverCertificateUntrusted), .transient, "transport"),
            (.transport(.badServerResponse), .transient, "transport"),
            (.transport(.other), .transient, "transport"),
            (.unauthorized, .auth, "unauthorized"),
            (.forbidden, .auth, "forbidden"),
            (.notFound, .permanent, "not_found"),
            (.conflict([]), .conflict, "conflict"),
            (.tooLarge, .permanent, "too_large"),
            (.rateLimited(retryAfter: .seconds(1)), .transient, "rate_limited"),
            (.server(status: 502), .transient, "server"),
            (.rejected(status: 400, body: []), .permanent, "rejected"),
            (.invalidRequest, .permanent, "invalid_request"),
            (.requestBodyFailed, .permanent, "request_body_failed"),
        ]
        for (error, retryClass, name) in cases {
            #expect(error.retryClass == retryClass, "\(error)")
            #expect(error.name == name, "\(error)")
            #expect(error.localizedDescription == error.message)
        }
    }

    @Test func offlineCodesAreExactlyTheSix() {
        let offline: [NativeNetworkCode] = [
            .notConnectedToInternet, .networkConnectionLost, .cannotFindHost, .cannotConnectToHost, .dnsLookupFailed,
            .timedOut,
        ]
        let transport: [NativeNetworkCode] = [
            .secureConnectionFailed, .serverCertificateUntrusted, .badServerResponse, .cannotDecodeContentData, .other,
        ]
        #expect(offline.allSatisfy { $0.isOffline })
        #expect(!transport.contains { $0.isOffline })
    }

    @Test func everyCurlFailureMapsToItsCase() throws {
        let origin = try NativeOrigin("https://127.0.0.1:9")
        let table: [(CurlError, Probe.Outcome?, NativeClientError)] = [
            (.couldNotResolveHost, .hostDoesNotExist, .offline(.cannotFindHost)),
            (.couldNotResolveHost, .resolverFailed, .offline(.dnsLookupFailed)),
            (.couldNotResolveProxy, nil, .offline(.dnsLookupFailed)),
            (.couldNotConnect, .noRoute, .offline(.notConnectedToInternet)),
            (.couldNotConnect, .routed, .offline(.cannotConnectToHost)),
            (.operationTimedOut, nil, .offline(.timedOut)),
            (.sendFailed, nil, .offline(.networkConnectionLost)),
            (.receiveFailed, nil, .offline(.networkConnectionLost)),
            (.partialBody, nil, .offline(.networkConnectionLost)),
            (.emptyReply, nil, .offline(.networkConnectionLost)),
            (.weirdServerReply, nil, .invalidResponse),
            (.badContentEncoding, nil, .transport(.cannotDecodeContentData)),
            (.tlsHandshakeFailed, nil, .transport(.secureConnectionFailed)),
            (.tlsPeerCertificateRejected, nil, .transport(.serverCertificateUntrusted)),
            (.tlsCACertificateUnusable, nil, .transport(.secureConnectionFailed)),
            (.tlsPinnedKeyMismatch, nil, .transport(.secureConnectionFailed)),
            (.setupFailed, nil, .transport(.other)),
            (.invalidURL, nil, .invalidRequest),
            (.invalidMethod, nil, .invalidRequest),
            (.invalidHeader, nil, .invalidRequest),
            (.invalidRequest, nil, .invalidRequest),
            (.bodySourceFailed, nil, .requestBodyFailed),
        ]
        for (curl, probe, expected) in table {
            let mapped = TransportFailure.classify(curl, probe: probe, origin: origin)
            #expect(mapped == expected, "\(curl)")
            // The message names the origin (the host alone for a name that did not resolve),
            // and never libcurl's generic text or its code.
            if mapped.networkCode != nil, curl != .couldNotResolveProxy {
                #expect(mapped.message.contains("127.0.0.1"), "\(mapped.message)")
            }
            #expect(!mapped.message.contains("curl error"), "\(mapped.message)")
        }
        // TLS is never offline.
        for tls in [CurlError.tlsHandshakeFailed, .tlsPeerCertificateRejected, .tlsCACertificateUnusable] {
            #expect(TransportFailure.classify(tls, probe: nil, origin: origin).retryClass == .transient)
        }
    }
}
