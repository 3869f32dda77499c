import LoopbackHTTPServer
import Testing

@testable import CurlKit

@Suite("Input refused before any I/O")
struct ValidationTests {
    @Test(arguments: ["a\r\nInjected: 1", "a\nInjected: 1", "a\rb", "a\u{0}b", "bell\u{7}", "del\u{7F}"])
    func headerValueWithControlCharacterIsRefused(value: String) {
        let error = #expect(throws: CurlError.invalidHeader) { try CurlHeader(name: "X-Test", value: value) }
        #expect(error?.message.hasPrefix("header X-Test: the value holds a control character") == true)
        #expect(error?.message.contains("Injected") == false, "the value is never quoted")
    }

    @Test(arguments: ["", "Bad Name", "Bad:Name", "Bad\r\nName", "Ünicode", "(comment)", "a/b"])
    func headerNameThatIsNotATokenIsRefused(name: String) {
        let error = #expect(throws: CurlError.invalidHeader) { try CurlHeader(name: name, value: "v") }
        #expect(error?.message.hasPrefix("invalid header name") == true)
    }

    @Test func headerBoundsAtTheEdge() throws {
        _ = try CurlHeader(name: String(repeating: "n", count: 256), value: "v")
        #expect(throws: CurlError.invalidHeader) {
            try CurlHeader(name: String(repeating: "n", count: 257), value: "v")
        }
        _ = try CurlHeader(name: "X", value: String(repeating: "v", count: 65_536))
        let error = #expect(throws: CurlError.invalidHeader) {
            try CurlHeader(name: "X", value: String(repeating: "v", count: 65_537))
        }
        #expect(error?.message == "header X: the value is 65537 bytes, more than the 65536-byte limit")
        let allowed = try CurlHeader(name: "!#$%&'*+-.^_`|~09azAZ", value: "tab\tand ünïcode")
        #expect(allowed.value == "tab\tand ünïcode")
    }

    @Test(arguments: ["", "GET POST", "GET\r\n", "PO:ST", "GÉT"])
    func methodThatIsNotATokenIsRefused(token: String) {
        #expect(throws: CurlError.invalidMethod) { try CurlMethod(token) }
    }

    @Test func methodLengthAtTheEdge() throws {
        #expect(try CurlMethod(String(repeating: "M", count: 64)).token.count == 64)
        #expect(throws: CurlError.invalidMethod) { try CurlMethod(String(repeating: "M", count: 65)) }
    }

    @Test(arguments: [
        "ftp://127.0.0.1/file", "file:///etc/passwd", "gopher://127.0.0.1/", "not a url", "/relative/path",
        "http://127.0.0.1/\u{0}x", "",
    ])
    func urlThatIsNotAbsoluteHTTPIsRefused(url: String) {
        #expect(throws: CurlError.invalidURL) { try CurlTransfer(url: url) }
    }

    @Test func setURLKeepsTheOldURLOnFailure() throws {
        let transfer = try CurlTransfer(url: "https://127.0.0.1:1/a")
        #expect(throws: CurlError.invalidURL) { try transfer.setURL("ftp://127.0.0.1/") }
        #expect(transfer.url == "https://127.0.0.1:1/a")
        try transfer.setURL("HTTP://127.0.0.1:1/b")
        #expect(transfer.url == "HTTP://127.0.0.1:1/b")
    }

    @Test(arguments: ["Content-Length", "transfer-encoding"])
    func framingHeaderIsRefusedBeforeAnyIO(name: String) async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.headers = [try CurlHeader(name: name, value: "5")]
        transfer.method = .post
        transfer.body = .bytes(bytes("12345"))
        let error = await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        #expect(error?.message == "header \(name) is refused: the request body decides the message framing")
        #expect(server.requests.isEmpty)
    }

    @Test func headWithBodyIsRefusedBeforeAnyIO() async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.method = .head
        transfer.body = .bytes([1])
        let error = await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        #expect(error?.message == "a HEAD request cannot carry a body")
        #expect(server.requests.isEmpty)
    }

    @Test func invalidTimeoutsAreRefusedBeforeAnyIO() async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.timeout = .zero
        await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        transfer.timeout = nil
        transfer.connectTimeout = .milliseconds(-5)
        await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        transfer.connectTimeout = .nanoseconds(1)
        _ = try await transfer.perform()
        #expect(server.requests.count == 1)
    }

    @Test func nulInAPathOptionIsRefusedBeforeAnyIO() async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.caFile = "/tmp/ca\u{0}.pem"
        let error = await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        #expect(error?.message == "invalid CA file: it contains a NUL byte")
        #expect(server.requests.isEmpty)
    }

    @Test(arguments: ["127.0.0.1:3128", "ftp://127.0.0.1:21", "gopher://127.0.0.1/", "http://proxy\u{0}x", "::"])
    func proxyWithoutASupportedSchemeIsRefusedBeforeAnyIO(proxy: String) async throws {
        let server = try server(.fixed())
        let transfer = try CurlTransfer(url: server.url("/"))
        transfer.proxy = proxy
        let error = await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
        #expect(error?.message.hasPrefix("invalid proxy: ") == true)
        #expect(error?.message.contains("127.0.0.1") == false, "the proxy, which may hold credentials, is not quoted")
        #expect(server.requests.isEmpty)
    }

    @Test func lowSpeedLimitBoundsAtTheEdge() throws {
        _ = try CurlLowSpeedLimit(bytesPerSecond: 1, duration: .seconds(1))
        #expect(throws: CurlError.invalidRequest) { try CurlLowSpeedLimit(bytesPerSecond: 0, duration: .seconds(1)) }
        #expect(throws: CurlError.invalidRequest) {
            try CurlLowSpeedLimit(bytesPerSecond: 1, duration: .milliseconds(999))
        }
    }

    @Test func receiveBufferSizeBoundsAtTheEdge() async throws {
        let server = try server(.fixed(body: bytes("ok")))
        let transfer = try CurlTransfer(url: server.url("/"))
        for refused in [1023, (10 << 20) + 1, 0, -1] {
            transfer.receiveBufferSize = refused
            let error = await #expect(throws: CurlError.invalidRequest) { try await transfer.perform() }
            #expect(error?.message == "invalid receive buffer size \(refused): it must be from 1 KiB to 10 MiB")
        }
        #expect(server.requests.isEmpty)
        for accepted in [1024, 10 << 20] {
            transfer.receiveBufferSize = accepted
            #expect(try await transfer.perform().status == 200)
        }
        #expect(server.requests.count == 2)
    }

    @Test func negativeBodyLengthIsRefused() {
        #expect(throws: CurlError.invalidRequest) { try CurlRequestBody.stream(length: -1) { _ in 0 } }
        #expect(throws: CurlError.invalidRequest) { try CurlRequestBody.fileDescriptor(0, length: -1) }
    }
}

@Suite("Error classification")
struct ErrorTests {
    @Test(arguments: [
        (Int32(1), CurlError.weirdServerReply), (3, .invalidURL), (5, .couldNotResolveProxy),
        (6, .couldNotResolveHost), (7, .couldNotConnect), (8, .weirdServerReply), (18, .partialBody),
        (28, .operationTimedOut), (35, .tlsHandshakeFailed), (52, .emptyReply), (55, .sendFailed),
        (56, .receiveFailed), (60, .tlsPeerCertificateRejected), (61, .badContentEncoding),
        (77, .tlsCACertificateUnusable), (90, .tlsPinnedKeyMismatch),
    ])
    func curlCodeMapsToItsKind(code: Int32, expected: CurlError) {
        let error = CurlError(curlCode: code, curlDescription: "text", detail: "more")
        #expect(error == expected)
        #expect(error.curlCode == code)
        #expect(error.message.hasSuffix(": text (curl error \(code)): more"))
    }

    @Test func unmappedCurlCodesCompareByCode() {
        let a = CurlError(curlCode: 27, curlDescription: "Out of memory", detail: nil)
        let b = CurlError(curlCode: 27, curlDescription: "Out of memory", detail: "x")
        let c = CurlError(curlCode: 16, curlDescription: "HTTP/2 error", detail: nil)
        #expect(a == b)
        #expect(a != c)
        #expect(a != .setupFailed)
        #expect(a.message == "the transfer failed: Out of memory (curl error 27)")
    }

    @Test func classificationPredicates() {
        #expect(CurlError.sendFailed.isConnectionLost)
        #expect(CurlError.receiveFailed.isConnectionLost)
        #expect(CurlError.partialBody.isConnectionLost)
        #expect(CurlError.emptyReply.isConnectionLost)
        #expect(!CurlError.couldNotConnect.isConnectionLost)
        #expect(!CurlError.operationTimedOut.isConnectionLost)
        #expect(CurlError.tlsHandshakeFailed.isTLSFailure)
        #expect(CurlError.tlsPeerCertificateRejected.isTLSFailure)
        #expect(CurlError.tlsCACertificateUnusable.isTLSFailure)
        #expect(CurlError.tlsPinnedKeyMismatch.isTLSFailure)
        #expect(!CurlError.receiveFailed.isTLSFailure)
        #expect(CurlError.aborted("a") == CurlError.aborted("b"))
        #expect(CurlError.aborted("a") != CurlError.bodySourceFailed)
    }
}

@Suite("Response head parsing")
struct ResponseHeadParserTests {
    func parse(_ lines: [String]) -> (ResponseHeadParser, [CurlResponseHead]) {
        var parser = ResponseHeadParser()
        var heads: [CurlResponseHead] = []
        for line in lines {
            let event = Array(line.utf8).withUnsafeBytes { parser.consume(line: $0) }
            if case .finalHead(let head) = event { heads.append(head) }
        }
        return (parser, heads)
    }

    @Test func interimHeadersAreResetByTheNextStatusLine() {
        let (_, heads) = parse([
            "HTTP/1.1 100 Continue\r\n", "X-Interim: 1\r\n", "\r\n",
            "HTTP/1.1 200 OK\r\n", "Content-Type: text/plain\r\n", "\r\n",
        ])
        #expect(heads.count == 1)
        #expect(heads.first?.status == 200)
        #expect(heads.first?.headers == [CurlHeader(received: "Content-Type", value: "text/plain")])
    }

    @Test func foldedLinesJoinAndWhitespaceIsTrimmed() {
        let (_, heads) = parse([
            "HTTP/1.0 404 Not Found\r\n", "X-Long:   first  \r\n", "\t second\r\n", "X-Empty:\r\n", "\r\n",
        ])
        #expect(heads.first?.httpVersion == .http1_0)
        #expect(heads.first?.reasonPhrase == "Not Found")
        #expect(heads.first?.headers.map(\.value) == ["first second", ""])
    }

    @Test func http2StatusLineAndTrailersAfterTheHeadAreIgnored() {
        let (parser, heads) = parse(["HTTP/2 204 \r\n", "a: b\r\n", "\r\n", "X-Trailer: t\r\n", "\r\n"])
        #expect(heads.count == 1)
        #expect(parser.finalHead?.httpVersion == .http2)
        #expect(parser.finalHead?.reasonPhrase == "")
        #expect(parser.finalHead?.headers.map(\.name) == ["a"])
        #expect(CurlHTTPVersion.http2.description == "HTTP/2")
        #expect(CurlHTTPVersion.http1_1.description == "HTTP/1.1")
    }

    @Test func headLookupIsCaseInsensitiveAndKeepsOrder() {
        let (_, heads) = parse(["HTTP/1.1 200 OK\r\n", "Set-Cookie: a\r\n", "X: y\r\n", "set-cookie: b\r\n", "\r\n"])
        #expect(heads.first?.values(forName: "SET-COOKIE") == ["a", "b"])
        #expect(heads.first?.firstValue(forName: "x") == "y")
        #expect(heads.first?.firstValue(forName: "missing") == nil)
    }
}
