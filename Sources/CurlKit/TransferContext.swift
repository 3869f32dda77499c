import CCurl
import Glibc

/// The state libcurl's callbacks work on during one perform. Used only on the transfer thread.
final class TransferContext {
    let cancel: CancelSignal
    private let onStatusAndHeaders: ((CurlResponseHead) -> CurlBodyDecision)?
    private let onBody: ((UnsafeRawBufferPointer) -> CurlBodyDecision)?
    private let body: CurlRequestBody?

    private(set) var parser = ResponseHeadParser()
    private(set) var abortReason: String?
    private(set) var bodySourceFailure: String?
    private(set) var bodyByteCount: Int64 = 0
    private var bodyBytesSent: Int64 = 0

    init(
        body: CurlRequestBody?, onStatusAndHeaders: ((CurlResponseHead) -> CurlBodyDecision)?,
        onBody: ((UnsafeRawBufferPointer) -> CurlBodyDecision)?, cancel: CancelSignal
    ) {
        self.body = body
        self.onStatusAndHeaders = onStatusAndHeaders
        self.onBody = onBody
        self.cancel = cancel
    }

    /// CURLOPT_HEADERFUNCTION: returns the line's length to continue, 0 to stop the transfer.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Int {
        if abortReason != nil || cancel.isCancelled { return 0 }
        if case .finalHead(let head) = parser.consume(line: line), let onStatusAndHeaders,
            case .abort(let reason) = onStatusAndHeaders(head)
        {
            abortReason = reason
            return 0
        }
        return line.count
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
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                bodySourceFailure = "waiting for the body descriptor failed: \(String(cString: strerror(errno)))"
                return nil
            }
            if fds[2].revents != 0 { cancel.cancel() }
            if fds[1].revents != 0 || cancel.isCancelled { return nil }
            if fds[0].revents & Int16(POLLNVAL) != 0 {
                bodySourceFailure = "the body descriptor \(descriptor) is not open"
                return nil
            }
            let count = read(descriptor, room.baseAddress, room.count)
            if count >= 0 { return count }
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
            bodySourceFailure = "reading the body descriptor failed: \(String(cString: strerror(errno)))"
            return nil
        }
    }
}
