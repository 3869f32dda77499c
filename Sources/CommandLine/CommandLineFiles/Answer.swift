import CommandLineKit
import Foundation
import SystemKit
import ThreadSupport
#if canImport(Glibc)
import Glibc
#endif

/// The longest answer to a yes/no question, newline excluded: 256 bytes.
public let maximumAnswerBytes = 256

/// Asks `question` on standard error when standard input is a terminal, then reads one line of
/// standard input, at most ``maximumAnswerBytes`` and its newline: true for `y` or `yes` (any
/// case, blanks around it ignored), false for anything else, for no line at all, or for a line
/// longer than that (with one line saying so). The read runs on a thread of its own, so a
/// signal ends the wait at once (``Interruptible``).
public func answeredYes(to question: String) async throws -> Bool {
    try await Interruptible.run(name: "answer") { answeredYesBlocking(to: question) }
}

/// ``answeredYes(to:)`` on the calling thread (for a question asked from a blocking callback
/// that already runs inside an ``Interruptible`` wait).
public func answeredYesBlocking(to question: String) -> Bool {
    if isatty(STDIN_FILENO) == 1 { try? OutputChannel.standardError.write(question + " [y/N] ") }
    let read = BoundedLine.read(STDIN_FILENO, limit: maximumAnswerBytes)
    let line: [UInt8]
    switch read {
    case .line(let bytes), .end(let bytes): line = bytes
    case .tooLong:
        Diagnostics.note("the answer is longer than \(maximumAnswerBytes) bytes; taken as no")
        return false
    case .failed(let reason):
        Diagnostics.note("cannot read the answer (\(reason)); taken as no")
        return false
    }
    let answer = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
    return answer == "y" || answer == "yes"
}

/// One line of a file descriptor, read with a bound and never past its newline (byte by byte,
/// so what follows stays unread for whoever reads next).
public enum BoundedLine {
    public enum Outcome: Sendable, Equatable {
        /// A line of at most `limit` bytes, without its newline (and without a CR before it).
        case line([UInt8])
        /// The input ended after these bytes (at most `limit`; none when it was empty).
        case end([UInt8])
        /// `limit + 1` bytes came without a newline; nothing more was read.
        case tooLong
        /// read(2) failed.
        case failed(String)
    }

    /// Reads at most `limit + 1` bytes of `descriptor`: a newline among them ends the line.
    public static func read(_ descriptor: Int32, limit: Int) -> Outcome {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = retryingInterrupts { Glibc.read(descriptor, &byte, 1) }
            if count < 0 {
                if errno == EAGAIN {
                    // A descriptor left non-blocking by whoever started us: wait until readable.
                    _ = try? Poll.wait(descriptor, for: Int16(POLLIN), timeout: -1)
                    continue
                }
                return .failed(String(cString: strerror(errno)))
            }
            if count == 0 { return .end(line) }
            if byte == UInt8(ascii: "\n") {
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return .line(line)
            }
            guard line.count < limit else { return .tooLong }
            line.append(byte)
        }
    }
}

/// Waits that signals always win: the blocking work runs on a thread of its own, and the
/// caller's wait ends as soon as its task is cancelled (ToolRunner cancels it at the first
/// SIGINT, SIGTERM or SIGHUP), after `interrupt` has been called to stop the work (a socket
/// shut down). The work's thread may still be running then; the process exits right after
/// (128+N), which closes every connection it held; a tool that stores only after its waits,
/// just before exit 0 (as rivet-pair does), stores nothing then.
public enum Interruptible {
    /// Runs `body` off Swift's cooperative threads, on a thread called `name` (what the wait is
    /// for, as `ps -L` and a debugger show it), and returns what it returns or throws, or throws
    /// `CancellationError` the moment the task is cancelled.
    public static func run<T: Sendable>(
        name: String, interrupt: @escaping @Sendable () -> Void = {}, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let gate = Gate<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                gate.install(continuation)
                let started = DetachedThread.start(name: name) { gate.finish(Result { try body() }) }
                if !started { gate.finish(.failure(CancellationError())) }
            }
        } onCancel: {
            interrupt()
            gate.finish(.failure(CancellationError()))
        }
    }

    /// Resumes the continuation once, with whichever outcome comes first.
    private final class Gate<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, any Error>?
        private var outcome: Result<T, any Error>?
        private var resumed = false

        func install(_ continuation: CheckedContinuation<T, any Error>) {
            lock.lock()
            if let outcome, !resumed {
                resumed = true
                lock.unlock()
                continuation.resume(with: outcome)
                return
            }
            self.continuation = continuation
            lock.unlock()
        }

        func finish(_ result: Result<T, any Error>) {
            lock.lock()
            guard !resumed, outcome == nil || continuation != nil else {
                lock.unlock()
                return
            }
            guard let continuation else {
                outcome = result
                lock.unlock()
                return
            }
            resumed = true
            self.continuation = nil
            lock.unlock()
            continuation.resume(with: result)
        }
    }
}
