import Foundation
import RivetTransport
import RivetWire
import SystemKit
import ThreadSupport
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// How a backend process ended.
struct BackendExit: Sendable, Equatable, CustomStringConvertible {
    /// The exit status, when it exited.
    let status: Int32?
    /// The signal that killed it, when one did.
    let signal: Int32?

    init(waitStatus: Int32) {
        if waitStatus & 0x7f == 0 {
            status = (waitStatus >> 8) & 0xff
            signal = nil
        } else {
            status = nil
            signal = waitStatus & 0x7f
        }
    }

    /// `exited with status 3` or `was killed by signal 9 (SIGKILL)`.
    var description: String {
        if let status { return "exited with status \(status)" }
        let number = signal ?? 0
        let name = Self.signalNames[number].map { " (\($0))" } ?? ""
        return "was killed by signal \(number)\(name)"
    }

    private static let signalNames: [Int32: String] = [
        SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
        SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV",
        SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
    ]
}

/// What a backend process reports to its owner, each from one of its threads.
struct BackendCallbacks: Sendable {
    /// The frames decoded from one read of the backend's stdout (after its hello), in order.
    let frames: @Sendable (UInt64, [RVT1Frame]) -> Void
    /// The backend's stdout ended: cleanly (nil) or inside or across the RVT1 rules.
    let streamEnded: @Sendable (UInt64, RVT1Error?) -> Void
    /// One line the backend wrote to stderr; returns false when the log takes no more lines
    /// for now (the rest of the chunk read is then counted with `stderrSuppressed`).
    let stderrLine: @Sendable (UInt64, String) -> Bool
    /// Lines of stderr dropped without being offered, counted.
    let stderrSuppressed: @Sendable (UInt64, Int) -> Void
    /// The process ended (reaped).
    let exited: @Sendable (UInt64, BackendExit) -> Void
}

/// One running backend child and the threads that serve its pipes: a writer for stdin (frames
/// are queued and written in order), a reader that decodes RVT1 from stdout, a reader for
/// stderr lines, and a waiter that reaps the process.
///
/// The child starts with every signal unblocked and at its default disposition (the daemon
/// ignores some), in its own process group (a terminal's Ctrl-C reaches only the daemon, which
/// stops the backend itself), with only descriptors 0, 1 and 2 open.
// @unchecked Sendable: every mutable field is read and written only under `monitor`.
final class BackendProcess: @unchecked Sendable {
    /// Which start of the backend this is (1 for the first).
    let generation: UInt64
    /// The child's process ID.
    let pid: pid_t

    private let stdinFD: Int32
    private let stdoutFD: Int32
    private let stderrFD: Int32
    private let callbacks: BackendCallbacks
    private let monitor = Monitor()
    private var outbox = FrameQueue()
    private var closingInput = false
    private var stopReading = false
    private var reaped = false
    /// Bytes of `outbox` per owner (a session's number), for the per-session queue bound.
    private var ownerBytes: [UInt64: Int] = [:]
    /// When the backend last took bytes from its stdin, or when bytes began waiting for it.
    /// The clock of the stall watchdog.
    private let clock: any RivetClock
    private var lastProgress: ContinuousClock.Instant
    /// The session loop's watch of stdout (set once at spawn).
    private var stdoutWatch: StreamLoopWatch?
    private let loop: StreamEventLoop
    // Read and decode stdout: touched only on the loop thread.
    private var stdoutDecoder: RVT1StreamDecoder
    private var stdoutBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var stdoutFailure: RVT1Error?

    /// The longest stderr line passed on whole; longer ones are cut into pieces this long.
    static let maximumStderrLine = 4096
    /// How much of stderr is read at once.
    static let stderrChunk = 1 << 20
    /// How long the stderr reader pauses after a chunk whose lines the log did not all take:
    /// a backend flooding stderr then waits on its own pipe (at most a chunk per pause, about
    /// 20 MB/s) instead of costing rivetd a core.
    static let stderrPause: Int32 = 50

    private init(
        generation: UInt64, pid: pid_t, stdinFD: Int32, stdoutFD: Int32, stderrFD: Int32, limits: RVT1Limits,
        callbacks: BackendCallbacks, loop: StreamEventLoop, clock: any RivetClock
    ) {
        self.clock = clock
        self.lastProgress = clock.now
        self.loop = loop
        self.stdoutDecoder = RVT1StreamDecoder(limits: limits)
        self.generation = generation
        self.pid = pid
        self.stdinFD = stdinFD
        self.stdoutFD = stdoutFD
        self.stderrFD = stderrFD
        self.callbacks = callbacks
    }

    /// Starts `command` (looked up in `PATH` when it has no slash) and its threads; the first
    /// bytes queued for stdin are `hello`. Its stdout is read on `loop` (the listener's session
    /// loop, a started one), so the frames it answers go out to devices from the same thread
    /// that reads their calls, with no hand-off between threads.
    /// - Throws: ``RivetDaemonError/backendFailed`` naming the command and the system's reason.
    static func spawn(
        command: [String], generation: UInt64, hello: [UInt8], limits: RVT1Limits, callbacks: BackendCallbacks,
        loop: StreamEventLoop, clock: any RivetClock
    ) throws(RivetDaemonError) -> BackendProcess {
        precondition(!command.isEmpty, "a backend command needs a program")
        var descriptors: [Int32] = []
        func makePipe() throws(RivetDaemonError) -> (read: Int32, write: Int32) {
            let pipe: PipeEnds
            do {
                pipe = try PipeEnds()
            } catch {
                for fd in descriptors { close(fd) }
                throw RivetDaemonError.backendFailed.with("cannot create a pipe for the backend: \(error.reason)")
            }
            descriptors += [pipe.readEnd, pipe.writeEnd]
            return (pipe.readEnd, pipe.writeEnd)
        }
        let input = try makePipe()
        let output = try makePipe()
        let errors = try makePipe()

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input.read, 0)
        posix_spawn_file_actions_adddup2(&actions, output.write, 1)
        posix_spawn_file_actions_adddup2(&actions, errors.write, 2)
        if let closeFrom = addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, command[0], &actions, &attributes, argv, environ)
        close(input.read)
        close(output.write)
        close(errors.write)
        guard result == 0 else {
            close(input.write)
            close(output.read)
            close(errors.read)
            throw RivetDaemonError.backendFailed.with(
                "cannot start the backend `\(command[0])`: \(String(cString: strerror(result)))")
        }
        _ = fcntl(input.write, F_SETFL, fcntl(input.write, F_GETFL) | O_NONBLOCK)
        _ = fcntl(output.read, F_SETFL, fcntl(output.read, F_GETFL) | O_NONBLOCK)
        // A stderr pipe as large as a chunk (best effort; 1 MiB is the default unprivileged
        // maximum), so one read takes what a flood wrote while the reader paused.
        _ = fcntl(errors.read, pipeSetSize, Int32(stderrChunk))
        let process = BackendProcess(
            generation: generation, pid: pid, stdinFD: input.write, stdoutFD: output.read, stderrFD: errors.read,
            limits: limits, callbacks: callbacks, loop: loop, clock: clock)
        process.outbox.append(hello)
        startThread("rivetd.backend.stdin") { process.writeLoop() }
        let watch = loop.watch(output.read, readable: { process.readStdout() }, removed: { process.stdoutEnded() })
        process.monitor.withLock { process.stdoutWatch = watch }
        startThread("rivetd.backend.stderr") { process.stderrLoop() }
        startThread("rivetd.backend.wait") { process.waitLoop() }
        return process
    }

    /// Writes encoded frame bytes to stdin, or queues what the pipe does not take at once for
    /// the writer thread (dropped once stdin is being closed). Never blocks: when nothing is
    /// queued the bytes go straight into the pipe, sparing a thread hand-off per frame.
    /// `owner` (a session's number, 0 for none) is charged for what waits in the queue.
    func send(_ bytes: [UInt8], owner: UInt64 = 0) {
        monitor.withLock {
            guard !closingInput else { return }
            var offset = 0
            // The writer keeps an entry queued until it is fully written, so an empty queue
            // means the writer is idle and writing here keeps the order.
            if outbox.isEmpty {
                while offset < bytes.count {
                    let written = bytes.withUnsafeBytes { raw in
                        retryingInterrupts { Glibc.write(stdinFD, raw.baseAddress! + offset, raw.count - offset) }
                    }
                    guard written > 0 else { break }
                    offset += written
                }
                if offset == bytes.count { return }
            }
            if outbox.isEmpty || offset > 0 { lastProgress = clock.now }
            outbox.append(offset == 0 ? bytes : Array(bytes[offset...]), owner: owner)
            if owner != 0 { ownerBytes[owner, default: 0] += bytes.count - offset }
            monitor.broadcast()
        }
    }

    /// Writes what is queued, then `last` (if any), then closes stdin: a backend reads end of
    /// file and should finish its calls and exit.
    func closeInput(after last: [UInt8]? = nil) {
        monitor.withLock {
            guard !closingInput else { return }
            if let last { outbox.append(last) }
            closingInput = true
            monitor.broadcast()
        }
    }

    /// Sends `signal` to the process unless it has already been reaped (its ID may then belong
    /// to another process).
    func signal(_ number: Int32) {
        monitor.withLock {
            if !reaped { _ = kill(pid, number) }
        }
    }

    /// Stops the readers of stdout and stderr (they otherwise run until end of file, which a
    /// grandchild holding the pipes can delay forever).
    func stopReaders() {
        let watch: StreamLoopWatch? = monitor.withLock {
            stopReading = true
            return stdoutWatch
        }
        if let watch { loop.unwatch(watch) }
    }

    /// Bytes queued for stdin and not yet written.
    var queuedBytes: Int { monitor.withLock { outbox.byteCount } }

    /// Bytes of `owner`'s frames queued for stdin and not yet written.
    func queuedBytes(owner: UInt64) -> Int { monitor.withLock { ownerBytes[owner] ?? 0 } }

    /// Since when bytes have waited for stdin without the backend reading any, or nil when
    /// nothing waits (or stdin is being closed).
    var stalledSince: ContinuousClock.Instant? {
        monitor.withLock { outbox.isEmpty || closingInput ? nil : lastProgress }
    }

    /// Removes the oldest queued entry and its owner's charge. Call under the lock.
    private func dequeue() {
        if let entry = outbox.firstEntry, entry.owner != 0 {
            let left = (ownerBytes[entry.owner] ?? 0) - entry.bytes.count
            ownerBytes[entry.owner] = left > 0 ? left : nil
        }
        outbox.removeFirst()
    }

    // MARK: Threads

    private func writeLoop() {
        while true {
            let next: [UInt8]? = monitor.withLock {
                while outbox.isEmpty && !closingInput { monitor.wait() }
                return outbox.first
            }
            guard let bytes = next else { break }
            if !writeAll(bytes) {
                monitor.withLock {
                    outbox.removeAll()
                    ownerBytes.removeAll()
                    closingInput = true
                }
                break
            }
            monitor.withLock { dequeue() }
        }
        close(stdinFD)
    }

    /// Writes `bytes` to the non-blocking stdin pipe; false when the backend stopped reading
    /// for good (closed the pipe) or stdin is being closed while the pipe stays full.
    private func writeAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                retryingInterrupts { Glibc.write(stdinFD, raw.baseAddress! + offset, raw.count - offset) }
            }
            if written > 0 {
                offset += written
                monitor.withLock { lastProgress = clock.now }
                continue
            }
            guard written < 0 && errno == EAGAIN else { return false }
            _ = try? Poll.wait(stdinFD, for: Int16(POLLOUT), timeout: 200)
            // A backend that stopped reading and is being stopped does not get the rest.
            if monitor.withLock({ closingInput && reaped }) { return false }
        }
        return true
    }

    /// Reads what stdout holds (on the session loop) and hands every frame of it to the core in
    /// one call; false once stdout ended, broke RVT1 or reading was stopped.
    private func readStdout() -> Bool {
        if monitor.withLock({ stopReading }) { return false }
        var frames: [RVT1Frame] = []
        defer { if !frames.isEmpty { callbacks.frames(generation, frames) } }
        // A few reads at most, so one busy backend does not hold up the sessions' own reads.
        for _ in 0..<4 {
            let count = stdoutBuffer.withUnsafeMutableBytes { raw in
                retryingInterrupts { Glibc.read(stdoutFD, raw.baseAddress, raw.count) }
            }
            if count < 0 { return errno == EAGAIN }
            if count == 0 {
                do throws(RVT1Error) { try stdoutDecoder.finish() } catch { stdoutFailure = error }
                return false
            }
            stdoutDecoder.append(stdoutBuffer[0..<count])
            while true {
                do throws(RVT1Error) {
                    guard let frame = try stdoutDecoder.next() else { break }
                    frames.append(frame)
                } catch {
                    stdoutFailure = error
                    return false
                }
            }
            if count < stdoutBuffer.count { return true }
        }
        return true
    }

    /// Stdout left the loop: closes it and reports how it ended (on the session loop).
    private func stdoutEnded() {
        close(stdoutFD)
        callbacks.streamEnded(generation, stdoutFailure)
    }

    /// Reads stderr in chunks of up to 1 MiB and offers the log one line at a time; once the
    /// log takes no more (its bound for the backend is used up), the rest of the chunk is only
    /// counted (newlines found with `memchr`), so a flood costs a read and a scan, not a line
    /// each.
    private func stderrLoop() {
        var buffer = [UInt8](repeating: 0, count: Self.stderrChunk)
        var line: [UInt8] = []
        var accepting = true
        func flush() {
            guard !line.isEmpty else { return }
            if accepting {
                accepting = callbacks.stderrLine(generation, String(decoding: line, as: UTF8.self))
            } else {
                callbacks.stderrSuppressed(generation, 1)
            }
            line.removeAll(keepingCapacity: true)
        }
        while true {
            if !accepting {
                var nothing: [pollfd] = []
                _ = try? Poll.wait(&nothing, timeout: Self.stderrPause)
            }
            guard let count = readChunk(stderrFD, &buffer), count > 0 else { break }
            accepting = true
            buffer.withUnsafeBytes { raw in
                let base = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
                var start = 0
                while start < count {
                    if !accepting && line.isEmpty {
                        // Count the rest of the chunk's lines without building them.
                        var lines = 0
                        var at = start
                        while at < count, let hit = memchr(base + at, Int32(UInt8(ascii: "\n")), count - at) {
                            lines += 1
                            at = base.distance(to: hit.assumingMemoryBound(to: UInt8.self)) + 1
                        }
                        if at < count { lines += 1 }  // an unfinished last line
                        callbacks.stderrSuppressed(generation, lines)
                        return
                    }
                    let end: Int
                    if let hit = memchr(base + start, Int32(UInt8(ascii: "\n")), count - start) {
                        end = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    } else {
                        end = count
                    }
                    let room = Self.maximumStderrLine - line.count
                    let take = min(end - start, room)
                    line.append(contentsOf: UnsafeBufferPointer(start: base + start, count: take))
                    start += take
                    if line.count >= Self.maximumStderrLine {
                        flush()
                    } else if start == end && end < count {
                        flush()
                        start = end + 1
                    }
                }
            }
        }
        flush()
        close(stderrFD)
    }

    /// Reads one chunk: its length, 0 at end of file, nil when reading failed or was stopped.
    private func readChunk(_ fd: Int32, _ buffer: inout [UInt8]) -> Int? {
        while true {
            if monitor.withLock({ stopReading }) { return nil }
            guard let ready = try? Poll.wait(fd, for: Int16(POLLIN), timeout: 250) else { return nil }
            if ready == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { raw in retryingInterrupts { Glibc.read(fd, raw.baseAddress, raw.count) } }
            if count >= 0 { return count }
            if errno == EAGAIN { continue }
            return nil
        }
    }

    private func waitLoop() {
        // Wait without reaping, so `signal` never hits a reused process ID; reap under the lock.
        var info = siginfo_t()
        _ = retryingInterrupts { waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) }
        var status: Int32 = 0
        monitor.withLock {
            _ = retryingInterrupts { waitpid(pid, &status, 0) }
            reaped = true
            monitor.broadcast()
        }
        callbacks.exited(generation, BackendExit(waitStatus: status))
    }
}

/// `F_SETPIPE_SZ` (fcntl.h), which Swift's Glibc module does not export.
private let pipeSetSize: Int32 = 1031

/// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34), which Swift's Glibc module does not
/// declare; nil on an older C library, where every descriptor the daemon opens is close-on-exec
/// anyway.
private let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
        return nil
    }
    return unsafeBitCast(
        symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()
