import CCurl
import Glibc
import SystemKit

/// The state libcurl's callbacks work on during one perform. Used only on the transfer thread.
final class TransferContext {
    let cancel: CancelSignal
    private let onStatusAndHeaders: ((CurlResponseHead) -> CurlBodyDecision)?
    private let onBody: ((UnsafeRawBufferPointer) -> CurlBodyDecision)?
    private let body: CurlRequestBody?
    private let isHead: Bool

    private(set) var parser = ResponseHeadParser()
    private(set) var abortReason: String?
    /// How the server broke HTTP, when a header line showed it (an oversized head, an invalid
    /// `Content-Length`); the transfer stops there.
    private(set) var protocolFailure: CurlError?
    /// Bytes of response head received (status lines and fields, interim responses included).
    private(set) var headByteCount = 0
    private(set) var bodySourceFailure: String?
    private(set) var bodyByteCount: Int64 = 0
    private var bodyBytesSent: Int64 = 0
    private var headerBytesReceived: Int64 = 0

    /// Bytes of header lines after the final head (trailer fields, and anything else libcurl
    /// passes on as a header line once the body has begun).
    private(set) var trailerByteCount = 0

    /// Every byte moved so far that makes progress: the response head up to its end, the
    /// body received, the request body sent. The stall check watches it change. Trailer bytes
    /// carry no body, so they never count: a server sending endless trailers stalls.
    var movedByteCount: Int64 { headerBytesReceived + bodyByteCount + bodyBytesSent }

    init(
        body: CurlRequestBody?, isHead: Bool, onStatusAndHeaders: ((CurlResponseHead) -> CurlBodyDecision)?,
        onBody: ((UnsafeRawBufferPointer) -> CurlBodyDecision)?, cancel: CancelSignal
    ) {
        self.body = body
        self.isHead = isHead
        self.onStatusAndHeaders = onStatusAndHeaders
        self.onBody = onBody
        self.cancel = cancel
    }

    /// Whether `count` bytes are within `limit`; past it, the transfer's protocol failure is
    /// `code` with `message`.
    private func within(_ count: Int, _ limit: Int, _ code: CurlError.Code, _ message: @autoclosure () -> String)
        -> Bool
    {
        guard count > limit else { return true }
        protocolFailure = CurlError(code: code, message: message())
        return false
    }

    /// CURLOPT_HEADERFUNCTION: returns the line's length to continue, 0 to stop the transfer.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Int {
        if abortReason != nil || cancel.isCancelled { return 0 }
        if parser.finalHead != nil {
            // libcurl keeps every field it passes on, trailers included: bound them, or a server
            // sending trailers forever grows memory without limit.
            trailerByteCount += line.count
            guard
                within(
                    trailerByteCount, CurlTransfer.maxTrailerBytes, .trailersTooLarge,
                    "the server sent too much after the response head: more than "
                        + "\(CurlTransfer.maxTrailerBytes) bytes (16 KiB) of trailer fields")
            else { return 0 }
            return line.count
        }
        headerBytesReceived += Int64(line.count)
        headByteCount += line.count
        guard
            within(
                headByteCount, CurlTransfer.maxResponseHeadBytes, .responseHeadTooLarge,
                "the server sent an oversized response head: more than "
                    + "\(CurlTransfer.maxResponseHeadBytes) bytes (256 KiB) of status line and header fields")
        else { return 0 }
        let head: CurlResponseHead
        switch parser.consume(line: line) {
        case .none: return line.count
        case .malformed(let problem):
            protocolFailure = CurlError(code: .weirdServerReply, message: "the server's reply is not valid HTTP: \(problem)")
            return 0
        case .finalHead(let final): head = final
        }
        if let problem = Self.contentLengthProblem(head, isHead: isHead) {
            protocolFailure = CurlError(
                code: .invalidContentLength, message: "the server sent \(problem) (RFC 9112 6.3)")
            return 0
        }
        if let onStatusAndHeaders, case .abort(let reason) = onStatusAndHeaders(head) {
            abortReason = reason
            return 0
        }
        return line.count
    }

    /// What is wrong with the head's `Content-Length`, or nil when it frames the body (or does
    /// not frame it: a HEAD request, 204, 304, or `Transfer-Encoding`, which overrides it).
    /// RFC 9112 §6.3: a value is digits only and a list of them must all be the same number;
    /// a value past 64 bits cannot be honoured.
    static func contentLengthProblem(_ head: CurlResponseHead, isHead: Bool) -> String? {
        guard !isHead, head.status != 204, head.status != 304,
            head.firstValue(forName: "Transfer-Encoding") == nil
        else { return nil }
        var length: UInt64?
        for field in head.values(forName: "Content-Length") {
            for element in field.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = element.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }
                let shown = String(element.prefix(40))
                guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
                    return "an invalid Content-Length \(String(reflecting: shown))"
                }
                var value: UInt64 = 0
                for digit in digits.reversed() {
                    let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
                    let (sum, overflowSum) = times.addingReportingOverflow(UInt64(digit - 0x30))
                    guard !overflowTimes, !overflowSum, sum <= UInt64(Int64.max) else {
                        return "a Content-Length too large for 64 bits (\(shown))"
                    }
                    value = sum
                }
                if let length, length != value {
                    return "conflicting Content-Length values (\(length) and \(value))"
                }
                length = value
            }
        }
        return nil
    }

    /// CURLOPT_WRITEFUNCTION: returns the piece's length to continue, 0 to stop the transfer.
    func receiveBody(_ piece: UnsafeRawBufferPointer) -> Int {
        if abortReason != nil || cancel.isCancelled { return 0 }
        if let onBody, case .abort(let reason) = onBody(piece) {
            abortReason = reason
            return 0
        }
        bodyByteCount += Int64(piece.count)
        return piece.count
    }

    /// CURLOPT_READFUNCTION: fills `buffer` from the body source; returns the byte count, 0 at
    /// the end, CURL_READFUNC_ABORT to stop the transfer.
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let abort = Int(CURL_READFUNC_ABORT)
        guard let body, !cancel.isCancelled else { return abort }
        var room = buffer
        if let length = body.length {
            let remaining = length - bodyBytesSent
            if remaining == 0 { return 0 }
            room = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), remaining))))
        }
        let produced: Int
        switch body.source {
        case .bytes(let bytes):
            let start = Int(bodyBytesSent)
            let count = min(room.count, bytes.count - start)
            bytes.withUnsafeBytes { source in
                room.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: count)
            }
            produced = count
        case .fileDescriptor(let descriptor):
            guard let count = readDescriptor(descriptor, into: room) else { return abort }
            produced = count
        case .reader(let read):
            do {
                produced = try read(room)
            } catch {
                bodySourceFailure = "the body reader threw: \(error)"
                return abort
            }
            guard (0...room.count).contains(produced) else {
                bodySourceFailure = "the body reader returned \(produced) for a \(room.count)-byte buffer"
                return abort
            }
        }
        if produced == 0, let length = body.length {
            bodySourceFailure = "the body ended after \(bodyBytesSent) of its announced \(length) bytes"
            return abort
        }
        bodyBytesSent += Int64(produced)
        return produced
    }

    /// Waits until `descriptor` is readable or the perform is cancelled, then reads; nil on
    /// failure or cancellation.
    private func readDescriptor(_ descriptor: Int32, into room: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            var fds = [
                pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                pollfd(fd: cancel.wakeFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: cancel.externalFD, events: Int16(POLLIN), revents: 0),
            ]
            do {
                try Poll.wait(&fds, timeout: -1)
            } catch {
                bodySourceFailure = "waiting for the body descriptor failed: \(error.reason)"
                return nil
            }
            if fds[2].revents != 0 { cancel.cancel() }
            if fds[1].revents != 0 || cancel.isCancelled { return nil }
            if fds[0].revents & Int16(POLLNVAL) != 0 {
                bodySourceFailure = "the body descriptor \(descriptor) is not open"
                return nil
            }
            let count = retryingInterrupts { read(descriptor, room.baseAddress, room.count) }
            if count >= 0 { return count }
            if errno == EAGAIN || errno == EWOULDBLOCK { continue }
            bodySourceFailure = "reading the body descriptor failed: \(String(cString: strerror(errno)))"
            return nil
        }
    }
}
