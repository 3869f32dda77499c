import Dispatch
import Glibc
import LoopbackHTTPServer
import TestSupport
import Testing

@testable import CurlKit

@Suite("Exchanges with a real server")
struct ExchangeTests {
    @Test func getStreamsStatusHeadersAndBodyInSeveralChunks() async throws {
        let chunks = [bytes("first "), bytes("second "), bytes("third "), bytes("fourth")]
        let server = try server(
            .chunked(
                headers: [LoopbackHTTPHeader("X-CuStOm-Header", "Mixed Case"), LoopbackHTTPHeader("x-lower", "a")],
                chunks: chunks, delay: .milliseconds(30)))
        let transfer = try CurlTransfer(url: server.url("/stream?x=1"))
        let received = Received()
        transfer.record(into: received)

        let result = try await transfer.perform()

        #expect(result.status == 200)
        #expect(result.head.reasonPhrase == "OK")
        #expect(result.head.httpVersion == .http1_1)
        #expect(received.heads == [result.head])
        #expect(received.body == chunks.flatMap { $0 })
        #expect(received.pieces.count >= 2, "the body should arrive as it is written, not in one piece")
        #expect(result.bodyByteCount == Int64(chunks.flatMap { $0 }.count))
        #expect(
            result.headers.map(\.name) == ["Transfer-Encoding", "Connection", "X-CuStOm-Header", "x-lower"])
        #expect(result.head.firstValue(forName: "x-custom-header") == "Mixed Case")
        #expect(result.effectiveURL == server.url("/stream?x=1"))
        #expect(result.redirectURL == nil)
        #expect(result.timings.total >= result.timings.firstByte)
        #expect(result.timings.total > .zero)

        let request = try #require(server.requests.first)
        #expect(request.method == "GET")
        #expect(request.target == "/stream?x=1")
        #expect(request.firstValue(forName: "Expect") == nil)
        #expect(request.firstValue(forName: "Accept-Encoding") == nil)
    }

    @Test func postSendsBodyAndHeadersInOrder() async throws {
        let server = try server(.fixed(status: 201, body: bytes("created")))
        let transfer = try CurlTransfer(url: server.url("/items"))
        transfer.method = .post
        transfer.headers = [
            try CurlHeader(name: "Content-Type", value: "application/json"),
            try CurlHeader(name: "X-Trace", value: "a\tb"),
            try CurlHeader(name: "X-Empty", value: ""),
        ]
        transfer.body = .bytes(bytes(#"{"a":1}"#))
        let received = Received()
        transfer.record(into: received)

        let result = try await transfer.perform()

        #expect(result.status == 201)
        #expect(received.body == bytes("created"))
        let request = try #require(server.requests.first)
        #expect(request.method == "POST")
        #expect(request.body == bytes(#"{"a":1}"#))
        #expect(request.firstValue(forName: "Content-Length") == "7")
        #expect(request.firstValue(forName: "X-Trace") == "a\tb")
        #expect(request.firstValue(forName: "X-Empty") == "")
        #expect(request.firstValue(forName: "Expect") == nil)
        let names = request.headers.map(\.name)
        let typeIndex = try #require(names.firstIndex(of: "Content-Type"))
        let traceIndex = try #require(names.firstIndex(of: "X-Trace"))
        #expect(typeIndex < traceIndex)
    }

    @Test func emptyBytesBodySendsContentLengthZero() async throws {
        let server = try server(.fixed(status: 204))
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.method = .put
        transfer.body = .bytes([])
        let result = try await transfer.perform()
        #expect(result.status == 204)
        let request = try #require(server.requests.first)
        #expect(request.method == "PUT")
        #expect(request.firstValue(forName: "Content-Length") == "0")
        #expect(request.body.isEmpty)
    }

    @Test func customMethodTokenIsSentVerbatim() async throws {
        let server = try server(.fixed(status: 207))
        let transfer = try CurlTransfer(url: server.url("/dav"))
        transfer.method = try CurlMethod("PROPFIND")
        let result = try await transfer.perform()
        #expect(result.status == 207)
        #expect(server.requests.first?.method == "PROPFIND")
        #expect(server.requests.first?.body == [])
    }

    @Test func streamedBodyOfUnknownLengthIsSentChunked() async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/upload"))
        transfer.method = .patch
        let parts = [bytes("alpha,"), bytes("beta,"), bytes("gamma")]
        var next = 0
        transfer.body = try .stream(length: nil) { buffer in
            guard next < parts.count else { return 0 }
            let part = parts[next]
            next += 1
            buffer.copyBytes(from: part)
            return part.count
        }
        _ = try await transfer.perform()
        let request = try #require(server.requests.first)
        #expect(request.method == "PATCH")
        #expect(request.bodyWasChunked)
        #expect(request.body == bytes("alpha,beta,gamma"))
    }

    @Test func bodyFromDescriptorIsSentWithItsLength() async throws {
        let server = try server(.fixed())
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let payload = [UInt8](repeating: 0x41, count: 3000)
        #expect(payload.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } == 3000)
        close(ends[1])
        let transfer = try CurlTransfer(url: server.url("/put"))
        transfer.method = .put
        transfer.body = try .fileDescriptor(ends[0], length: 3000)
        _ = try await transfer.perform()
        let request = try #require(server.requests.first)
        #expect(request.firstValue(forName: "Content-Length") == "3000")
        #expect(!request.bodyWasChunked)
        #expect(request.body == payload)
    }

    @Test func bodyFromDescriptorOfUnknownLengthIsSentUntilEndOfFile() async throws {
        let server = try server(.fixed())
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        #expect(write(ends[1], "streamed", 8) == 8)
        close(ends[1])
        let transfer = try CurlTransfer(url: server.url("/post"))
        transfer.method = .post
        transfer.body = try .fileDescriptor(ends[0], length: nil)
        _ = try await transfer.perform()
        #expect(server.requests.first?.bodyWasChunked == true)
        #expect(server.requests.first?.body == bytes("streamed"))
    }

    @Test func interimResponseHeadersStayOutOfTheFinalHead() async throws {
        let interim = LoopbackHTTPResponse.headBytes(
            status: 103, headers: [LoopbackHTTPHeader("Link", "</style.css>; rel=preload")])
        let final = LoopbackHTTPResponse.fixed(headers: [LoopbackHTTPHeader("X-Final", "yes")], body: bytes("ok"))
        let server = try server(LoopbackHTTPResponse(steps: [.send(interim)] + final.steps))
        let transfer = try CurlTransfer(url: server.url("/"))
        let received = Received()
        transfer.record(into: received)

        let result = try await transfer.perform()

        #expect(result.status == 200)
        #expect(received.heads.count == 1)
        #expect(result.head.firstValue(forName: "Link") == nil)
        #expect(result.head.firstValue(forName: "X-Final") == "yes")
        #expect(received.body == bytes("ok"))
    }

    @Test func continueResponseHeadersStayOutOfTheFinalHead() async throws {
        var configuration = LoopbackHTTPServer.Configuration()
        configuration.continueResponseHeaders = [LoopbackHTTPHeader("X-Interim", "continue")]
        let server = try LoopbackHTTPServer(configuration: configuration) { request in
            .fixed(headers: [LoopbackHTTPHeader("X-Got", String(request.body.count))])
        }
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.method = .post
        transfer.headers = [try CurlHeader(name: "Expect", value: "100-continue")]
        transfer.body = .bytes(Array(repeating: 7, count: 100))

        let result = try await transfer.perform()

        #expect(result.status == 200)
        #expect(result.head.firstValue(forName: "X-Interim") == nil)
        #expect(result.head.firstValue(forName: "X-Got") == "100")
        #expect(server.requests.first?.firstValue(forName: "Expect") == "100-continue")
    }

    @Test func headRequestReturnsHeadersOnly() async throws {
        let head = LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "1000")])
        let server = try server(LoopbackHTTPResponse(steps: [.send(head)]))
        let transfer = try CurlTransfer(url: server.url("/file"))
        transfer.method = .head
        let received = Received()
        transfer.record(into: received)
        let result = try await transfer.perform()
        #expect(result.status == 200)
        #expect(result.head.firstValue(forName: "content-length") == "1000")
        #expect(result.bodyByteCount == 0)
        #expect(received.pieces.isEmpty)
        #expect(server.requests.first?.method == "HEAD")
    }

    @Test func transferCanBePerformedAgain() async throws {
        let server = try LoopbackHTTPServer { request in .fixed(body: bytes(request.target)) }
        let transfer = try CurlTransfer(url: server.url("/one"))
        let received = Received()
        transfer.record(into: received)
        _ = try await transfer.perform()
        try transfer.setURL(server.url("/two"))
        _ = try await transfer.perform()
        #expect(received.body == bytes("/one/two"))
        #expect(server.requests.map(\.target) == ["/one", "/two"])
    }

    @Test func noPieceIsLargerThanTheReceiveBuffer() async throws {
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let server = try server(.fixed(body: body))
        for size in [1024, 256 << 10] {
            let transfer = try CurlTransfer(url: server.url("/"))
            transfer.receiveBufferSize = size
            let received = Received()
            transfer.record(into: received)
            _ = try await transfer.perform()
            #expect(received.body == body)
            #expect(received.pieces.allSatisfy { $0.count <= size }, "buffer \(size)")
            if size == 1024 { #expect(received.pieces.count >= body.count / 1024) }
        }
    }

    @Test func bodyBytesArriveExactlyAsSentUnlessDecompressionIsAsked() async throws {
        // `printf hello | gzip -n | od -An -tu1`
        let gzipped: [UInt8] = [
            31, 139, 8, 0, 0, 0, 0, 0, 0, 3, 203, 72, 205, 201, 201, 7, 0, 134, 166, 16, 54, 5, 0, 0, 0,
        ]
        let server = try server(.fixed(headers: [LoopbackHTTPHeader("Content-Encoding", "gzip")], body: gzipped))

        let raw = try CurlTransfer(url: server.url("/raw"))
        let rawReceived = Received()
        raw.record(into: rawReceived)
        _ = try await raw.perform()
        #expect(rawReceived.body == gzipped)
        #expect(server.requests[0].firstValue(forName: "Accept-Encoding") == nil)

        let decoded = try CurlTransfer(url: server.url("/decoded"))
        decoded.automaticDecompression = true
        let decodedReceived = Received()
        decoded.record(into: decodedReceived)
        _ = try await decoded.perform()
        #expect(decodedReceived.body == bytes("hello"))
        #expect(server.requests[1].firstValue(forName: "Accept-Encoding")?.contains("gzip") == true)
    }

    @Test func concurrentTransfersAllComplete() async throws {
        let server = try LoopbackHTTPServer { request in
            LoopbackHTTPResponse(
                steps: [.pause(.milliseconds(100))] + LoopbackHTTPResponse.fixed(body: bytes(request.target)).steps)
        }
        // How long each transfer took is read where the work runs: its start on its task just
        // before the transfer begins, its end on the transfer thread at its last body piece. The
        // time the tasks wait for one of the cooperative pool's two threads (held by other tests
        // in a parallel run) before starting or after ending is the machine's, not the transfers'.
        let finished = try await withThrowingTaskGroup(of: ([UInt8], Duration).self) { group in
            for index in 0..<8 {
                let url = server.url("/\(index)")
                group.addTask {
                    let transfer = try CurlTransfer(url: url)
                    let received = Received()
                    transfer.record(into: received)
                    let start = ContinuousClock.now
                    let result = try await transfer.perform()
                    #expect(result.status == 200)
                    return (received.body, start.duration(to: try #require(received.lastPieceAt)))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(finished.map(\.0)) == Set((0..<8).map { bytes("/\($0)") }))
        #expect(server.requests.count == 8)
        for (_, took) in finished { #expect(took < .seconds(5) + schedulingSlack) }
    }
}

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite("Redirects and proxies", .serialized)
struct RedirectTests {
    @Test func redirectIsReturnedNotFollowed() async throws {
        let target = try server(.fixed(body: bytes("secret page")))
        let origin = try server(
            .fixed(status: 302, headers: [LoopbackHTTPHeader("Location", target.url("/landing"))]))
        let transfer = try CurlTransfer(url: origin.url("/start"))
        transfer.headers = [try CurlHeader(name: "Authorization", value: "Bearer origin-only")]
        let received = Received()
        transfer.record(into: received)

        let result = try await transfer.perform()

        #expect(result.status == 302)
        #expect(result.head.firstValue(forName: "Location") == target.url("/landing"))
        #expect(result.redirectURL == target.url("/landing"))
        #expect(result.effectiveURL == origin.url("/start"))
        #expect(received.body.isEmpty)
        #expect(origin.requests.count == 1)
        #expect(origin.requests.first?.firstValue(forName: "Authorization") == "Bearer origin-only")
        #expect(target.requests.isEmpty)
    }

    @Test func relativeLocationIsResolvedAgainstTheRequestURL() async throws {
        let origin = try server(
            .fixed(status: 301, headers: [LoopbackHTTPHeader("Location", "../next?page=2")]))
        let transfer = try CurlTransfer(url: origin.url("/a/b/start"))
        let result = try await transfer.perform()
        #expect(result.status == 301)
        #expect(result.head.firstValue(forName: "Location") == "../next?page=2")
        #expect(result.redirectURL == origin.url("/a/next?page=2"))
        #expect(origin.requests.count == 1)
    }

    @Test func statusWithRetryAfterIsAResultNotAnError() async throws {
        let origin = try server(.fixed(status: 429, headers: [LoopbackHTTPHeader("Retry-After", "120")]))
        let result = try await CurlTransfer(url: origin.url("/")).perform()
        #expect(result.status == 429)
        #expect(result.head.reasonPhrase == "Too Many Requests")
        #expect(result.head.firstValue(forName: "Retry-After") == "120")
    }

    @Test func cookiesAreNeverStoredOrSent() async throws {
        let server = try server(.fixed(headers: [LoopbackHTTPHeader("Set-Cookie", "session=abc; Path=/")]))
        let transfer = try CurlTransfer(url: server.url("/first"))
        _ = try await transfer.perform()
        try transfer.setURL(server.url("/second"))
        _ = try await transfer.perform()
        #expect(server.requests.count == 2)
        #expect(server.requests.allSatisfy { $0.firstValue(forName: "Cookie") == nil })
    }

    @Test func netrcIsIgnored() async {
        await #expect(processExitsWith: .success) {
            let server = try server(.fixed())
            let home = "/tmp/curlkit-netrc-\(getpid())"
            mkdir(home, 0o700)
            let netrc = "\(home)/.netrc"
            let line = "machine 127.0.0.1 login user password netrc-secret\n"
            let file = open(netrc, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = write(file, line, line.utf8.count)
            close(file)
            setenv("HOME", home, 1)
            let completed = (try? await CurlTransfer(url: server.url("/")).perform()) != nil
            unlink(netrc)
            rmdir(home)
            let sentCredentials = server.requests.first?.firstValue(forName: "Authorization") != nil
            server.stop()
            exit(completed && !sentCredentials ? 0 : 1)
        }
    }

    @Test func explicitProxyIsUsed() async throws {
        let origin = try server(.fixed(body: bytes("direct")))
        let proxy = try server(.fixed(body: bytes("via proxy")))
        let transfer = try CurlTransfer(url: origin.url("/page"))
        transfer.proxy = proxy.baseURL
        let received = Received()
        transfer.record(into: received)
        _ = try await transfer.perform()
        #expect(received.body == bytes("via proxy"))
        #expect(proxy.requests.first?.target == origin.url("/page"))
        #expect(origin.requests.isEmpty)
    }

    @Test func proxyEnvironmentIsIgnored() async {
        await #expect(processExitsWith: .success) {
            let origin = try server(.fixed(body: bytes("direct")))
            let proxy = try server(.fixed(body: bytes("via proxy")))
            for name in ["http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
                setenv(name, proxy.baseURL, 1)
            }
            let transfer = try CurlTransfer(url: origin.url("/page"))
            let result = try await transfer.perform()
            let direct = result.status == 200 && origin.requests.count == 1 && proxy.requests.isEmpty
            origin.stop()
            proxy.stop()
            exit(direct ? 0 : 1)
        }
    }
}

/// One test at a time: several of these perform on the calling thread, which holds a thread of
/// Swift's cooperative pool (two on a two-core machine) until the transfer is stopped; two of
/// them at once left no thread for the task that stops them, and `swift test` hung.
@Suite("Stopping a transfer", .serialized)
struct AbortAndCancelTests {
    /// A 64 MiB chunked body in 64 KiB chunks: more than loopback socket buffers hold.
    static func hugeChunkedBody() -> LoopbackHTTPResponse {
        let chunk = LoopbackHTTPResponse.chunkBytes([UInt8](repeating: 0x5A, count: 65_536))
        let head = LoopbackHTTPResponse.headBytes(
            status: 200, headers: [LoopbackHTTPHeader("Transfer-Encoding", "chunked")])
        return LoopbackHTTPResponse(
            steps: [.send(head)] + Array(repeating: .send(chunk), count: 1024) + [.send(bytes("0\r\n\r\n"))])
    }

    @Test func bodyAbortStopsTheTransferWithTheTypedError() async throws {
        let server = try server(Self.hugeChunkedBody())
        let limit = 1 << 20
        let transfer = try CurlTransfer(url: server.url("/huge"))
        var delivered = 0
        var callsAfterAbort = 0
        var aborted = false
        transfer.onBody = { piece in
            if aborted { callsAfterAbort += 1 }
            delivered += piece.count
            guard delivered <= limit else {
                aborted = true
                return .abort(reason: "body exceeds \(limit) bytes")
            }
            return .continue
        }

        let error = await #expect(throws: CurlError.aborted("any reason")) { try await transfer.perform() }

        #expect(error?.abortReason == "body exceeds \(limit) bytes")
        #expect(error?.message == "transfer aborted: body exceeds \(limit) bytes")
        #expect(callsAfterAbort == 0)
        #expect(delivered > limit)
        #expect(delivered <= limit + 16_384, "at most one libcurl write (16 KiB) past the bound")
        #expect(await eventually { server.exchanges.first?.outcome == .peerGone })
        let sent = try #require(server.exchanges.first?.bytesSent)
        #expect(sent < 64 << 20, "the server could not write the whole body")
    }

    @Test func headAbortStopsBeforeAnyBody() async throws {
        let server = try server(.fixed(body: [UInt8](repeating: 1, count: 10_000)))
        let transfer = try CurlTransfer(url: server.url("/"))
        var bodyCalls = 0
        transfer.onStatusAndHeaders = { head in
            head.firstValue(forName: "Content-Length") == "10000"
                ? .abort(reason: "declared body too large") : .continue
        }
        transfer.onBody = { _ in
            bodyCalls += 1
            return .continue
        }
        let error = await #expect(throws: CurlError.aborted("")) { try await transfer.perform() }
        #expect(error?.abortReason == "declared body too large")
        #expect(bodyCalls == 0)
    }

    /// Starts `transfer` in a task, waits for `ready` and then `settle`, cancels, and returns
    /// how long the cancelled perform took to finish and what it threw.
    func cancel(
        url: String, configure: @escaping @Sendable (CurlTransfer) -> Void = { _ in },
        settle: Duration = .zero, whenReady ready: () -> Bool
    ) async throws -> (Duration, (any Error)?) {
        let task = Task {
            let transfer = try CurlTransfer(url: url)
            configure(transfer)
            return try await transfer.perform()
        }
        #expect(await eventually(ready))
        try await Task.sleep(for: settle)
        let clock = ContinuousClock()
        let start = clock.now
        task.cancel()
        let outcome = await task.result
        let elapsed = clock.now - start
        if case .failure(let error) = outcome { return (elapsed, error) }
        return (elapsed, nil)
    }

    @Test func cancellationWhileServerHangsBeforeHeaders() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.hangUntilStopped]))
        let (elapsed, error) = try await cancel(url: server.url("/")) { server.requests.count == 1 }
        #expect(error is CancellationError)
        #expect(elapsed < .seconds(1) + schedulingSlack)
    }

    /// On the transfer's own thread and on the calling thread alike.
    @Test(arguments: [false, true])
    func cancellationWhileServerHangsMidBody(onCallingThread: Bool) async throws {
        let head = LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "1000")])
        let server = try server(LoopbackHTTPResponse(steps: [.send(head + bytes("0123456789")), .hangUntilStopped]))
        let got = SharedCount()
        let (elapsed, error) = try await cancel(
            url: server.url("/"),
            configure: { transfer in
                transfer.runsOnCallingThread = onCallingThread
                transfer.onBody = { piece in
                    got.add(piece.count)
                    return .continue
                }
            },
            whenReady: { got.current == 10 })
        #expect(error is CancellationError)
        #expect(elapsed < .seconds(1) + schedulingSlack)
    }

    @Test func cancellationWhileReadingABodyDescriptor() async throws {
        let server = try server(.fixed())
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let source = ends[0]
        let (elapsed, error) = try await cancel(
            url: server.url("/"),
            configure: { transfer in
                transfer.method = .post
                transfer.body = try? .fileDescriptor(source, length: nil)
            },
            // Give the transfer time to connect, send its head and block on the empty pipe.
            settle: .milliseconds(100), whenReady: { true })
        #expect(error is CancellationError)
        #expect(elapsed < .seconds(1) + schedulingSlack)
        #expect(server.requests.isEmpty)
    }

    @Test func onTheCallingThreadTheCallbacksRunOnTheThreadThatPerforms() async throws {
        let server = try server(.fixed(body: bytes("calling thread")))
        let url = server.url("/")
        let task = Task { () throws -> (CurlResult, [UInt8], Bool) in
            let transfer = try CurlTransfer(url: url)
            transfer.runsOnCallingThread = true
            let caller = pthread_self()
            var onCaller = true
            var body: [UInt8] = []
            transfer.onBody = { piece in
                onCaller = onCaller && pthread_equal(pthread_self(), caller) != 0
                body += piece
                return .continue
            }
            let result = try await transfer.perform()
            return (result, body, onCaller)
        }
        let (result, body, sameThread) = try await task.value
        #expect(result.status == 200)
        #expect(body == bytes("calling thread"))
        #expect(sameThread)
    }

    /// The cancel descriptor stops a transfer no task cancellation reaches: mid-body, and while
    /// the transfer waits for its request body, on the calling thread.
    @Test(arguments: [false, true])
    func theCancelDescriptorStopsTheTransfer(whileReadingTheBody: Bool) async throws {
        let head = LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "1000")])
        let server = try server(LoopbackHTTPResponse(steps: [.send(head + bytes("0123456789")), .hangUntilStopped]))
        var interrupt: [Int32] = [-1, -1]
        var emptyBody: [Int32] = [-1, -1]
        try #require(pipe(&interrupt) == 0 && pipe(&emptyBody) == 0)
        defer { for descriptor in interrupt + emptyBody { close(descriptor) } }
        let got = SharedCount()
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.runsOnCallingThread = true
        transfer.cancelDescriptor = interrupt[0]
        // Without the descriptor the transfer would end only here, with a timeout error.
        transfer.timeout = .seconds(5)
        if whileReadingTheBody {
            transfer.method = .post
            transfer.body = try .fileDescriptor(emptyBody[0], length: nil)
        }
        transfer.onBody = { piece in
            got.add(piece.count)
            return .continue
        }
        let writeEnd = interrupt[1]
        // Written from a Dispatch thread: the transfer holds this cooperative thread meanwhile.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) {
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
        }
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: CancellationError.self) { try await transfer.perform() }
        #expect(clock.now - start < .seconds(2) + schedulingSlack)
        #expect(got.current == (whileReadingTheBody ? 0 : 10))
    }

    @Test func performInACancelledTaskDoesNoIO() async throws {
        let server = try server(.fixed())
        let url = server.url("/")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await CurlTransfer(url: url).perform()
        }
        let outcome = await task.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(server.requests.isEmpty)
    }

    @MainActor @Test func secondPerformWhileTheFirstRunsIsRefused() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.hangUntilStopped]))
        let transfer = try CurlTransfer(url: server.url("/"))
        let first = Task { @MainActor in try await transfer.perform() }
        #expect(await eventually { server.requests.count == 1 })
        let error = await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        #expect(error?.message == "this transfer is already being performed")
        first.cancel()
        let outcome = await first.result
        #expect(throws: CancellationError.self) { try outcome.get() }
    }
}

@Suite("Transport failures")
struct FailureTests {
    @Test func connectionRefusedIsCouldNotConnect() async throws {
        let port = try LoopbackHTTPServer.closedPort()
        let error = await #expect(throws: CurlError.couldNotConnect) {
            try await CurlTransfer(url: "http://127.0.0.1:\(port)/").perform()
        }
        #expect(error?.curlCode == 7)
        #expect(error?.isConnectionLost == false)
        #expect(error?.message.hasPrefix("the connection could not be made: ") == true)
        #expect(error?.detail?.contains("\(port)") == true)
    }

    @Test func closeMidBodyIsPartialBody() async throws {
        let head = LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "1000")])
        let server = try server(LoopbackHTTPResponse(steps: [.send(head + bytes("0123456789")), .close]))
        let error = await #expect(throws: CurlError.partialBody) {
            try await CurlTransfer(url: server.url("/")).perform()
        }
        #expect(error?.isConnectionLost == true)
        #expect(error?.curlCode == 18)
    }

    @Test func closeMidChunkedBodyIsPartialBody() async throws {
        let chunked = LoopbackHTTPResponse.chunked(chunks: [bytes("abc"), bytes("def")])
        let server = try server(LoopbackHTTPResponse(steps: Array(chunked.steps.dropLast()) + [.close]))
        let error = await #expect(throws: CurlError.partialBody) {
            try await CurlTransfer(url: server.url("/")).perform()
        }
        #expect(error?.isConnectionLost == true)
    }

    @Test func resetMidBodyIsReceiveFailed() async throws {
        let head = LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "1000")])
        let server = try server(
            LoopbackHTTPResponse(steps: [.send(head + bytes("0123456789")), .pause(.milliseconds(50)), .reset]))
        let error = await #expect(throws: CurlError.receiveFailed) {
            try await CurlTransfer(url: server.url("/")).perform()
        }
        #expect(error?.isConnectionLost == true)
    }

    @Test func closeBeforeAnyReplyIsEmptyReply() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.close]))
        let error = await #expect(throws: CurlError.emptyReply) {
            try await CurlTransfer(url: server.url("/")).perform()
        }
        #expect(error?.isConnectionLost == true)
    }

    @Test(arguments: ["SSH-2.0-OpenSSH_9.2\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n"])
    func garbageReplyIsWeirdServerReply(reply: String) async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.send(bytes(reply))]))
        let error = await #expect(throws: CurlError.weirdServerReply) {
            try await CurlTransfer(url: server.url("/")).perform()
        }
        #expect(error?.isConnectionLost == false)
    }

    /// libcurl keeps its timeouts in whole milliseconds of its own clock, so one fires up to a
    /// millisecond before ours reads the full time (a 300 ms connect timeout ended after
    /// 299.989 ms by the test's clock once).
    let curlTimerGranularity = Duration.milliseconds(1)

    @Test func overallTimeoutExpires() async throws {
        let server = try server(LoopbackHTTPResponse(steps: [.hangUntilStopped]))
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.timeout = .milliseconds(200)
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: CurlError.operationTimedOut) { try await transfer.perform() }
        #expect(clock.now - start >= .milliseconds(200) - curlTimerGranularity)
        // The upper bound is timed on the transfer's thread: the awaiting task may wait long for
        // a thread of the cooperative pool to resume on while a parallel run holds both.
        let elapsed = try #require(error?.elapsed)
        #expect(elapsed < .seconds(2) + schedulingSlack)
    }

    @Test func slowBodyWithinTimeoutCompletes() async throws {
        let server = try server(.chunked(chunks: [bytes("a"), bytes("b")], delay: .milliseconds(50)))
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.timeout = .seconds(5)
        transfer.connectTimeout = .seconds(5)
        let received = Received()
        transfer.record(into: received)
        _ = try await transfer.perform()
        #expect(received.body == bytes("ab"))
    }

    @Test func lowSpeedLimitExpires() async throws {
        let head = LoopbackHTTPResponse.headBytes(status: 200, headers: [LoopbackHTTPHeader("Content-Length", "1000")])
        let server = try server(LoopbackHTTPResponse(steps: [.send(head), .hangUntilStopped]))
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.lowSpeedLimit = try CurlLowSpeedLimit(bytesPerSecond: 100, duration: .seconds(1))
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: CurlError.operationTimedOut) { try await transfer.perform() }
        #expect(clock.now - start >= .seconds(1) - curlTimerGranularity)
        let elapsed = try #require(error?.elapsed, "timed on the transfer's thread")
        #expect(elapsed < .seconds(4) + schedulingSlack)
    }

    @Test func connectTimeoutExpires() async throws {
        let listener = try UnansweredListener()
        let transfer = try CurlTransfer(url: "http://127.0.0.1:\(listener.port)/")
        transfer.connectTimeout = .milliseconds(300)
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: CurlError.operationTimedOut) { try await transfer.perform() }
        #expect(error?.detail?.contains("onnect") == true, "the detail should name the connect phase")
        #expect(clock.now - start >= .milliseconds(300) - curlTimerGranularity)
        let elapsed = try #require(error?.elapsed, "timed on the transfer's thread")
        #expect(elapsed < .seconds(3) + schedulingSlack)
    }

    @Test func bodySourceEndingBeforeItsLengthFails() async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.method = .put
        var sent = false
        transfer.body = try .stream(length: 10) { buffer in
            guard !sent else { return 0 }
            sent = true
            buffer.copyBytes(from: bytes("12345"))
            return 5
        }
        let error = await #expect(throws: CurlError.bodySourceFailed) { try await transfer.perform() }
        #expect(error?.message == "the request body source failed: the body ended after 5 of its announced 10 bytes")
    }

    @Test func bodySourceThrowingFails() async throws {
        struct DiskGone: Error {}
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.method = .post
        transfer.body = try .stream(length: nil) { _ in throw DiskGone() }
        let error = await #expect(throws: CurlError.bodySourceFailed) { try await transfer.perform() }
        #expect(error?.message.contains("DiskGone") == true)
    }

    @Test func bodySourceIsNeverOfferedRoomPastItsLength() async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.method = .post
        var offered = 0
        transfer.body = try .stream(length: 3) { buffer in
            offered += buffer.count
            buffer.copyBytes(from: [UInt8](repeating: 0x62, count: buffer.count))
            return buffer.count
        }
        _ = try await transfer.perform()
        #expect(offered == 3)
        #expect(server.requests.first?.body == bytes("bbb"))
    }
}
