import LoopbackHTTPServer
import Rastrillo
import TestSupport
import Testing

/// The in-memory body bounds, at their edges, with Content-Length and chunked bodies.
@Suite struct BoundsTests {
    static let fourMiB = NativeHTTP.defaultMaxBytes

    @Test func theDefaultBoundIsFourMiB() {
        #expect(Self.fourMiB == 4_194_304)
        #expect(NativeHTTP.maxBytesLimit == 268_435_456)
        #expect(NativeRequest("/").maxBytes == Self.fourMiB)
    }

    @Test func exactlyFourMiBPassesWithContentLength() async throws {
        let body = pattern(Self.fourMiB)
        let server = try server(.fixed(body: body))
        #expect(try await client(server).request("/") == body)
    }

    @Test func oneByteMoreFailsWithContentLengthBeforeAnyBodyIsRead() async throws {
        let server = try LoopbackHTTPServer { _ in
            // The head announces one byte too many, then the server waits: the refusal comes from
            // the announced length alone.
            LoopbackHTTPResponse(steps: [
                .send(
                    LoopbackHTTPResponse.headBytes(
                        status: 200, headers: [LoopbackHTTPHeader("Content-Length", String(Self.fourMiB + 1))])),
                .hangUntilStopped,
            ])
        }
        let error = await caught { _ = try await client(server).request("/") }
        #expect(error as? NativeClientError == .tooLarge)
        #expect((error as? NativeClientError)?.retryClass == .permanent)
    }

    @Test func exactlyFourMiBPassesChunked() async throws {
        let body = pattern(Self.fourMiB)
        let chunks = stride(from: 0, to: body.count, by: 65_536).map { Array(body[$0..<min($0 + 65_536, body.count)]) }
        let server = try server(.chunked(chunks: chunks))
        let response = try await client(server).responseDetails(NativeRequest("/"))
        #expect(response.headers["content-length"] == nil)
        #expect(response.body == body)
    }

    @Test func oneByteMoreFailsChunkedAsSoonAsTheBoundIsCrossed() async throws {
        // 4 MiB + 1 byte in chunks, then the server never finishes the body: the client must
        // stop at the crossing byte, not wait for the end.
        let body = pattern(Self.fourMiB + 1)
        var steps: [LoopbackHTTPStep] = [
            .send(
                LoopbackHTTPResponse.headBytes(
                    status: 200, headers: [LoopbackHTTPHeader("Transfer-Encoding", "chunked")]))
        ]
        for start in stride(from: 0, to: body.count, by: 65_536) {
            steps.append(.send(LoopbackHTTPResponse.chunkBytes(Array(body[start..<min(start + 65_536, body.count)]))))
        }
        steps.append(.hangUntilStopped)
        let script = steps
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPResponse(steps: script) }
        let started = ContinuousClock.now
        let error = await caught { _ = try await client(server).request("/") }
        #expect(error as? NativeClientError == .tooLarge)
        // The server never ends the body and the client has no stall timeout: a client that
        // waited for the end would never return, so the bound only has to hold on a loaded
        // two-core machine (26.7 s measured there for the 4 MiB).
        #expect(ContinuousClock.now - started < .seconds(45) + schedulingSlack)
    }

    @Test func anExplicitBoundAtItsEdge() async throws {
        let limit = 5_000_000
        let exact = try server(.chunked(chunks: [pattern(limit)]))
        let request = NativeRequest("/", maxBytes: limit)
        #expect(try await client(exact).responseDetails(request).body.count == limit)
        let over = try server(.chunked(chunks: [pattern(limit + 1)]))
        let error = await caught { _ = try await client(over).responseDetails(request) }
        #expect(error as? NativeClientError == .tooLarge)
        // A zero bound accepts only an empty body.
        let empty = try server(.fixed(body: []))
        #expect(try await client(empty).responseDetails(NativeRequest("/", maxBytes: 0)).body.isEmpty)
        let one = try server(.fixed(body: [1]))
        let tooLarge = await caught { _ = try await client(one).responseDetails(NativeRequest("/", maxBytes: 0)) }
        #expect(tooLarge as? NativeClientError == .tooLarge)
    }

    @Test func boundsAbove256MiBAreRefusedBeforeIO() async throws {
        let server = try server(.fixed(body: bytes("small")))
        let http = try client(server)
        #expect(try await http.responseDetails(NativeRequest("/", maxBytes: NativeHTTP.maxBytesLimit)).body == bytes("small"))
        #expect(server.requests.count == 1)
        for bound in [NativeHTTP.maxBytesLimit + 1, -1] {
            let error = await caught { _ = try await http.responseDetails(NativeRequest("/", maxBytes: bound)) }
            #expect(error as? NativeClientError == .invalidRequest)
        }
        #expect(server.requests.count == 1)
    }

    @Test func errorBodiesAreBoundedToo() async throws {
        let server = try server(.fixed(status: 404, body: pattern(Self.fourMiB + 1)))
        let error = await caught { _ = try await client(server).request("/") }
        #expect(error as? NativeClientError == .tooLarge)
    }
}
