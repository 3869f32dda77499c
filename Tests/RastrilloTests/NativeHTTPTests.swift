import Foundation
import LoopbackHTTPServer
import Rastrillo
import Testing
import TestSupport

@Suite struct NativeHTTPTests {
    @Test func responseDetailsReturnsStatusHeadersAndBody() async throws {
        let server = try server(.fixed(status: 201, headers: [LoopbackHTTPHeader("X-Thing", "a")], body: bytes("made")))
        let response = try await client(server).responseDetails(NativeRequest("/things?x=1"))
        #expect(response.status == 201)
        #expect(response.body == bytes("made"))
        #expect(response.headers["x-thing"] == "a")
        #expect(response.headers["X-THING"] == "a")
        #expect(response.headers["content-length"] == "4")
        #expect(server.requests.first?.target == "/things?x=1")
        #expect(server.requests.first?.method == "GET")
    }

    @Test func repeatedHeadersAreAllKept() async throws {
        let server = try server(
            .fixed(headers: [LoopbackHTTPHeader("Link", "<a>"), LoopbackHTTPHeader("link", "<b>")], body: []))
        let response = try await client(server).responseDetails(NativeRequest("/"))
        #expect(response.headers.values("LINK") == ["<a>", "<b>"])
    }

    @Test func methodHeadersAndBodyAreSent() async throws {
        let server = try server(.fixed(status: 204))
        let request = NativeRequest(
            method: "PATCH", "/doc", headers: [try NativeHeaderField(name: "Content-Type", value: "application/json")],
            body: .bytes(bytes("{\"a\":1}")))
        let response = try await client(server).responseDetails(request)
        #expect(response.status == 204)
        let received = try #require(server.requests.first)
        #expect(received.method == "PATCH")
        #expect(received.body == bytes("{\"a\":1}"))
        #expect(received.firstValue(forName: "content-type") == "application/json")
    }

    @Test func bodyFromADescriptorIsStreamed() async throws {
        let server = try server(.fixed())
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let payload = pattern(100_000)
        let writer = Thread {
            payload.withUnsafeBytes { _ = write(writeEnd, $0.baseAddress, $0.count) }
            close(writeEnd)
        }
        writer.start()
        defer { close(readEnd) }
        _ = try await client(server).responseDetails(
            NativeRequest(method: "PUT", "/blob", body: .fileDescriptor(readEnd, length: nil)))
        #expect(server.requests.first?.body == payload)
        #expect(server.requests.first?.bodyWasChunked == true)
    }

    @Test func theCredentialGoesToTheOriginAsABearerHeader() async throws {
        let server = try server(.fixed())
        let credential = try NativeCredential.bearer("s3cret-token")
        _ = try await client(server, credential: credential).request("/")
        #expect(server.requests.first?.firstValue(forName: "Authorization") == "Bearer s3cret-token")
        #expect(!credential.description.contains("s3cret"))
    }

    @Test func aCustomCredentialHeader() async throws {
        let server = try server(.fixed())
        _ = try await client(server, credential: try .header("X-Api-Key", token: "k1")).request("/")
        #expect(server.requests.first?.firstValue(forName: "X-Api-Key") == "k1")
        #expect(server.requests.first?.firstValue(forName: "Authorization") == nil)
    }

    @Test func badCredentialsAreRefusedWithoutQuotingThem() {
        for token in ["", "has space", "line\nbreak", "nul\u{0}"] {
            let error = #expect(throws: NativeClientError.invalidRequest) { try NativeCredential.bearer(token) }
            if !token.isEmpty { #expect(error?.message.contains(token) == false) }
        }
        #expect(throws: NativeClientError.invalidRequest) { try NativeCredential.header("Bad Name", token: "t") }
    }

    @Test func headersThatWouldReplaceTheCredentialOrHostAreRefusedBeforeIO() async throws {
        let server = try server(.fixed())
        let http = try client(server, credential: try .bearer("t"))
        for name in ["authorization", "Host"] {
            let request = NativeRequest("/", headers: [try NativeHeaderField(name: name, value: "x")])
            let error = await caught { _ = try await http.responseDetails(request) }
            #expect(error as? NativeClientError == .invalidRequest)
        }
        #expect(server.requests.isEmpty)
    }

    @Test func invalidMethodsAndHeadersAreRefused() async throws {
        let server = try server(.fixed())
        let error = await caught { _ = try await client(server).responseDetails(NativeRequest(method: "GE T", "/")) }
        #expect(error as? NativeClientError == .invalidRequest)
        #expect(throws: NativeClientError.invalidRequest) { try NativeHeaderField(name: "X", value: "a\r\nInjected: 1") }
        #expect(throws: NativeClientError.invalidRequest) { try NativeHeaderField(name: "X Y", value: "a") }
        #expect(server.requests.isEmpty)
    }

    @Test func aTargetOutsideTheOriginIsRefusedBeforeIO() async throws {
        let server = try server(.fixed())
        let other = try LoopbackHTTPServer { _ in .fixed() }
        let http = try client(server, credential: try .bearer("t"))
        for target in [other.url("/x"), "//127.0.0.1:\(other.port)/x", "x"] {
            let error = await caught { _ = try await http.responseDetails(NativeRequest(target)) }
            #expect(error as? NativeClientError == .invalidRequest, "\(target)")
        }
        #expect(server.requests.isEmpty)
        #expect(other.requests.isEmpty)
        // The same origin written as an absolute URL is fine.
        _ = try await http.request(server.url("/same"))
        #expect(server.requests.map(\.target) == ["/same"])
    }

    @Test func redirectsAreNeverFollowedAndTheTargetSeesNoCredential() async throws {
        let target = try LoopbackHTTPServer { _ in .fixed(body: bytes("elsewhere")) }
        let origin = try LoopbackHTTPServer { _ in
            .fixed(status: 302, headers: [LoopbackHTTPHeader("Location", target.url("/landing"))], body: bytes("moved"))
        }
        let http = try client(origin, credential: try .bearer("never-leaves"))
        let response = try await http.responseDetails(NativeRequest("/start"))
        #expect(response.status == 302)
        #expect(response.headers["location"] == target.url("/landing"))
        #expect(response.body == bytes("moved"))
        let error = await caught { _ = try await http.request("/start") }
        #expect(error as? NativeClientError == .rejected(status: 302, body: []))
        #expect((error as? NativeClientError)?.message.contains(target.url("/landing")) == true)
        #expect(origin.requests.count == 2)
        #expect(origin.requests.allSatisfy { $0.firstValue(forName: "Authorization") == "Bearer never-leaves" })
        #expect(target.requests.isEmpty)
    }

    @Test func seeOtherIsUnauthorizedAndNotFollowed() async throws {
        let login = try LoopbackHTTPServer { _ in .fixed() }
        let origin = try LoopbackHTTPServer { _ in
            .fixed(status: 303, headers: [LoopbackHTTPHeader("Location", login.url("/login"))])
        }
        let error = await caught { _ = try await client(origin, credential: try .bearer("t")).request("/") }
        #expect(error as? NativeClientError == .unauthorized)
        #expect((error as? NativeClientError)?.retryClass == .auth)
        #expect(login.requests.isEmpty)
    }

    @Test(arguments: [
        (401, NativeClientError.unauthorized), (403, .forbidden), (404, .notFound), (409, .conflict([])),
        (413, .tooLarge), (429, .rateLimited(retryAfter: nil)), (500, .server(status: 500)),
        (503, .server(status: 503)), (400, .rejected(status: 400, body: [])),
    ])
    func statusesThrowTheirCaseFromRequest(status: Int, expected: NativeClientError) async throws {
        let server = try server(.fixed(status: status, body: bytes("why: \(status)")))
        let error = await caught { _ = try await client(server).request("/") }
        let typed = try #require(error as? NativeClientError)
        #expect(typed == expected)
        #expect(typed.status == status)
        // response and responseDetails return any status.
        #expect(try await client(server).response("/").status == status)
    }

    @Test func conflictCarriesTheBody() async throws {
        let server = try server(.fixed(status: 409, body: bytes("{\"current\":7}")))
        let error = await caught { _ = try await client(server).request("/", method: "PUT", body: .bytes([])) }
        #expect((error as? NativeClientError)?.body == bytes("{\"current\":7}"))
        #expect((error as? NativeClientError)?.retryClass == .conflict)
    }

    @Test func retryAfterDeltaAndDateFromARealServer() async throws {
        let now = Date(timeIntervalSince1970: 784_111_777)
        let delta = try server(.fixed(status: 429, headers: [LoopbackHTTPHeader("Retry-After", "17")]))
        let first = await caught { _ = try await client(delta, clock: ManualClock(wallClockStart: now)).request("/") }
        #expect((first as? NativeClientError)?.retryAfter == .seconds(17))
        let date = try server(
            .fixed(status: 503, headers: [LoopbackHTTPHeader("Retry-After", "Sun, 06 Nov 1994 08:51:37 GMT")]))
        let second = await caught { _ = try await client(date, clock: ManualClock(wallClockStart: now)).request("/") }
        #expect(second as? NativeClientError == .rateLimited(retryAfter: nil))
        #expect((second as? NativeClientError)?.retryAfter == .seconds(120))
    }

    @Test func headRequestsIgnoreTheAnnouncedLength() async throws {
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPResponse(steps: [
                .send(LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "99999999")]))
            ])
        }
        let response = try await client(server).responseDetails(NativeRequest(method: "HEAD", "/", maxBytes: 0))
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
    }

    @Test func theObserverSeesEveryResponseAndOfflineFailure() async throws {
        let log = EventLog()
        let server = try server(.fixed(status: 404))
        let http = try client(server, observer: log.observer)
        _ = try await http.response("/")
        let closed = NativeHTTP(
            origin: try NativeOrigin("http://127.0.0.1:\(try LoopbackHTTPServer.closedPort())"), observer: log.observer)
        let error = await caught { _ = try await closed.request("/") }
        let offline = try #require(error as? NativeClientError)
        #expect(log.all == [.response(http.origin, status: 404), .offline(closed.origin, offline)])
    }
}
