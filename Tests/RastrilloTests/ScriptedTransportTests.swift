import Foundation
import Rastrillo
import RastrilloTestSupport
import TestSupport
import Testing

@Suite struct ScriptedTransportTests {
    let origin = try! NativeOrigin("https://api.example.test")

    @Test func answersInOrderAndRecordsRequests() async throws {
        let transport = ScriptedTransport(
            origin: origin,
            replies: [.respond(status: 200, body: bytes("one")), .respond(status: 404, body: bytes("gone"))])
        #expect(try await transport.request("/a") == bytes("one"))
        let error = await caught { _ = try await transport.request("/b") }
        #expect(error as? NativeClientError == .notFound)
        #expect(transport.requests.map(\.target) == ["/a", "/b"])
        let exhausted = await caught { _ = try await transport.request("/c") }
        #expect(exhausted is ScriptedTransport.ScriptError)
    }

    @Test func usableThroughTheProtocol() async throws {
        let transport: any NativeTransport = ScriptedTransport(
            origin: origin, replies: [.respond(status: 409, body: bytes("stale"))])
        let error = await caught { _ = try await transport.request("/doc", method: "PUT") }
        #expect((error as? NativeClientError)?.body == bytes("stale"))
    }

    @Test func keepsTheOriginBoundAndTheBounds() async throws {
        let transport = ScriptedTransport(
            origin: origin,
            replies: [
                .respond(status: 200, body: pattern(NativeHTTP.defaultMaxBytes)),
                .respond(status: 200, body: pattern(NativeHTTP.defaultMaxBytes + 1)),
                .respond(status: 200, headers: [try NativeHeaderField(name: "Content-Length", value: "10")], body: []),
            ])
        let outside = await caught { _ = try await transport.request("https://other.test/") }
        #expect(outside as? NativeClientError == .invalidRequest)
        let overLimit = await caught {
            _ = try await transport.responseDetails(NativeRequest("/", maxBytes: NativeHTTP.maxBytesLimit + 1))
        }
        #expect(overLimit as? NativeClientError == .invalidRequest)
        #expect(transport.requests.isEmpty)
        #expect(try await transport.request("/").count == NativeHTTP.defaultMaxBytes)
        let tooLarge = await caught { _ = try await transport.request("/") }
        #expect(tooLarge as? NativeClientError == .tooLarge)
        let announced = await caught { _ = try await transport.responseDetails(NativeRequest("/", maxBytes: 9)) }
        #expect(announced as? NativeClientError == .tooLarge)
    }

    @Test func offlineAndTransportFailures() async throws {
        let log = EventLog()
        let transport = ScriptedTransport(
            origin: origin, replies: [.fail(.cannotConnectToHost), .fail(.secureConnectionFailed)],
            observer: log.observer)
        let offline = await caught { _ = try await transport.request("/") }
        #expect(offline as? NativeClientError == .offline(.cannotConnectToHost))
        let tls = await caught { _ = try await transport.request("/") }
        #expect(tls as? NativeClientError == .transport(.secureConnectionFailed))
        #expect(log.all == [.offline(origin, .offline(.cannotConnectToHost))])
    }

    @Test func hangsUntilCancelled() async throws {
        let transport = ScriptedTransport(origin: origin, replies: [.hangUntilCancelled])
        let task = Task { try await transport.request("/") }
        #expect(await eventually { transport.requests.count == 1 })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test func commitThenLoseTheResponse() async throws {
        let transport = ScriptedTransport(
            origin: origin, replies: [.commitThenLoseResponse, .respond(status: 200, body: bytes("applied once"))])
        let body = NativeRequestBody.bytes(bytes("x"))
        let lost = await caught { _ = try await transport.request("/op", method: "POST", body: body) }
        #expect(lost as? NativeClientError == .offline(.networkConnectionLost))
        #expect(transport.committed.map(\.target) == ["/op"])
        #expect(try await transport.request("/op", method: "POST", body: body) == bytes("applied once"))
        #expect(transport.committed.count == 1)
    }

    @Test func retryAfterReadsTheInjectedClock() async throws {
        let now = Date(timeIntervalSince1970: 784_111_777)
        let transport = ScriptedTransport(
            origin: origin,
            replies: [.respond(status: 429, headers: [try NativeHeaderField(name: "Retry-After", value: "Sun, 06 Nov 1994 08:49:47 GMT")])],
            clock: ManualClock(wallClockStart: now))
        let error = await caught { _ = try await transport.request("/") }
        #expect((error as? NativeClientError)?.retryAfter == .seconds(10))
    }
}
