/// Reads one HTTP/1.1 request from a stream: the head (at most 64 KiB), then the body by
/// `Content-Length` or `Transfer-Encoding: chunked`.
final class RequestReader {
    struct Head {
        let method: String
        let target: String
        let version: String
        let headers: [LoopbackHTTPHeader]

        func firstValue(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name }?.value
        }

        var expectsContinue: Bool { firstValue("expect")?.lowercased() == "100-continue" }
    }

    /// The request is larger than the server reads.
    struct TooLarge: Error {
        let status: Int
    }

    private static let maxHeadBytes = 65_536
    private let stream: any LoopbackByteStream
    private let maxBodyBytes: Int
    private var buffer: [UInt8] = []

    init(stream: any LoopbackByteStream, maxBodyBytes: Int) {
        self.stream = stream
        self.maxBodyBytes = maxBodyBytes
    }

    /// The request head, or nil when the client closed before sending a complete one.
    func readHead() throws -> Head? {
        var lines: [String] = []
        while true {
            guard let line = try readLine(limit: Self.maxHeadBytes) else { return nil }
            if line.isEmpty {
                if lines.isEmpty { continue }
                break
            }
            lines.append(line)
            if lines.joined().utf8.count > Self.maxHeadBytes { throw TooLarge(status: 431) }
        }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3 else { return nil }
        let headers = lines.compactMap { line -> LoopbackHTTPHeader? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
            return LoopbackHTTPHeader(String(line[..<colon]), value)
        }
        return Head(
            method: String(requestLine[0]), target: String(requestLine[1]), version: String(requestLine[2]),
            headers: headers)
    }

    /// Reads the body `head` announces and returns the whole request.
    func readBody(of head: Head) throws -> LoopbackHTTPRequest {
        var body: [UInt8] = []
        let chunked = head.firstValue("transfer-encoding")?.lowercased() == "chunked"
        if chunked {
            while true {
                guard let sizeLine = try readLine(limit: 1024) else {
                    throw LoopbackHTTPServerError("body ended early")
                }
                let sizeText = sizeLine.prefix { $0 != ";" }.trimmingCharacters(in: " \t")
                guard let size = Int(sizeText, radix: 16), size >= 0 else {
                    throw LoopbackHTTPServerError("bad chunk size line")
                }
                if size == 0 {
                    while let trailer = try readLine(limit: Self.maxHeadBytes), !trailer.isEmpty {}
                    break
                }
                guard body.count + size <= maxBodyBytes else { throw TooLarge(status: 413) }
                body += try readExactly(size)
                guard try readLine(limit: 2) == "" else { throw LoopbackHTTPServerError("chunk without CRLF") }
            }
        } else if let lengthText = head.firstValue("content-length") {
            guard let length = Int(lengthText), length >= 0 else { throw LoopbackHTTPServerError("bad Content-Length") }
            guard length <= maxBodyBytes else { throw TooLarge(status: 413) }
            body = try readExactly(length)
        }
        return LoopbackHTTPRequest(
            method: head.method, target: head.target, version: head.version, headers: head.headers, body: body,
            bodyWasChunked: chunked)
    }

    /// A line without its CRLF (or bare LF), or nil at end of stream.
    private func readLine(limit: Int) throws -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard buffer.count <= limit else { throw TooLarge(status: 431) }
            let more = try stream.receive(maxCount: 16_384)
            if more.isEmpty { return nil }
            buffer += more
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            let more = try stream.receive(maxCount: min(1 << 20, count - buffer.count))
            if more.isEmpty { throw LoopbackHTTPServerError("body ended early") }
            buffer += more
        }
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        return bytes
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let isContent: (Character) -> Bool = { !set.contains($0) }
        guard let first = firstIndex(where: isContent), let last = lastIndex(where: isContent) else { return "" }
        return String(self[first...last])
    }
}
