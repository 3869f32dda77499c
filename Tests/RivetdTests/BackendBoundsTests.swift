import Foundation
import Glibc
import OpenSSLKit
import RivetCompanion
import RivetDaemon
import RivetPairing
import RivetRegistry
import RivetWire
import TestSupport
import SystemKit
import Testing
import ToolTestSupport

/// Issue 27, findings 5, 7 and 8: a stranger or a backend cannot flood rivetd's log, and a
/// backend that stops answering or reading cannot hang devices or grow rivetd.
@Suite(.serialized) struct BackendBoundsTests {
    /// The bytes of `path` from `offset` on.
    static func tail(_ path: String, from offset: Int) -> String {
        guard let data = FileManager.default.contents(atPath: path), data.count >= offset else { return "" }
        return String(decoding: data[offset...], as: UTF8.self)
    }

    static func size(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// rivetd's CPU time (user and system) in seconds, from /proc.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // Fields after the command: state is 0, utime 11, stime 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("a flood of PairBegins for another application writes at most a burst of lines and one report")
    func pairBeginFlood() async throws {
        try await withDaemon(try Home()) { daemon in
            let deviceHome = try daemon.home.device("stranger")
            let before = Self.size(daemon.process.stderrPath)
            let started = ContinuousClock.now
            let attempts = 175
            var done = 0
            while done < attempts {
                let batch = min(8, attempts - done)
                var connects: [Spawned] = []
                for _ in 0..<batch {
                    connects.append(try Spawned.start(
                        ToolProcess.path(of: "rivet-pair"),
                        ["--connect", "127.0.0.1:\(daemon.port)", "--application-id", "org.example.other"],
                        environment: deviceHome.environment, directory: deviceHome.path, stdinPipe: true))
                }
                for connect in connects { #expect(try await connect.wait() == 1) }
                done += batch
            }
            let elapsed = Int((ContinuousClock.now - started).components.seconds) + 1
            let refusal = "for application \"org.example.other\": this gateway serves \"\(testApplication)\""
            // Each rivet-pair exited after its refusal, which rivetd logs (or counts) first.
            let written = Self.size(daemon.process.stderrPath) - before
            #expect(try await daemon.stop() == 0)
            let log = Self.tail(daemon.process.stderrPath, from: before)
            let lines = log.components(separatedBy: refusal).count - 1
            // Every line the strangers caused (refusals, and at debug their connections
            // closing) shares one bucket: 20 at once, then 1 a second from one address.
            let strangerLines = log.components(separatedBy: "from 127.0.0.1:").count - 1
            #expect(lines >= 1 && strangerLines <= 20 + elapsed, "\(strangerLines) lines in \(elapsed) s: \(log.suffix(3000))")
            // Every refusal is accounted for: written, or counted in the report at stop.
            let report = try #require(log.split(separator: "\n").first(where: { $0.contains("similar lines from 127.0.0.1") }))
            let counted = report.components(separatedBy: "suppressed ").last?.split(separator: " ").first.flatMap { Int($0) }
            #expect(counted.map { $0 + strangerLines >= attempts } == true, "\(report)")
            // Before the bound: 28,841 bytes for 175 refusals at warn; debug adds a line per
            // connection. Now a burst's worth.
            #expect(written < 16 * 1024, "\(written) bytes logged for \(attempts) refusals")
            print("pairBeginFlood: \(attempts) refusals, \(lines) lines, \(written) bytes logged")
        }
    }

    @Test("a backend flooding stderr gets a burst of lines, one report, and costs rivetd little")
    func stderrFlood() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Phone", scopes: ["viewer"]))
            defer { raw.close() }
            #expect(try await raw.call(1, "current-score", #"{"game-id":"warm"}"#).kind == .result)
            let before = Self.size(daemon.process.stderrPath)
            let cpuBefore = Self.cpuSeconds(daemon.process.pid)
            let started = ContinuousClock.now
            #expect(try await raw.call(2, "current-score", #"{"game-id":"flood-stderr:3000"}"#).kind == .result)
            let elapsed = Int((ContinuousClock.now - started).components.seconds) + 1
            let cpu = Self.cpuSeconds(daemon.process.pid) - cpuBefore
            let written = Self.size(daemon.process.stderrPath) - before
            #expect(try await daemon.stop() == 0)
            let log = Self.tail(daemon.process.stderrPath, from: before)
            let lines = log.components(separatedBy: "backend: rivet-test-backend: flooding stderr").count - 1
            #expect(lines >= 1 && lines <= 20 + elapsed, "\(lines) backend lines in \(elapsed) s")
            let report = try #require(log.split(separator: "\n").first(where: { $0.contains("similar lines from the backend") }))
            let counted = report.components(separatedBy: "suppressed ").last?.split(separator: " ").first.flatMap { Int($0) } ?? 0
            #expect(counted > 1000, "\(report)")
            // Before the bound: 15.9 MB logged and 2.84 s of rivetd's CPU for such a flood.
            #expect(written < 64 * 1024, "\(written) bytes logged")
            print("stderrFlood: \(counted + lines) lines from the backend, \(lines) logged, \(written) bytes, rivetd CPU \(cpu) s")
        }
    }

    // MARK: In-process daemons, with short backend bounds

    /// A daemon run in this process with `limits`, the test backend, and a log kept in memory.
    final class Local: Sendable {
        let daemon: RivetDaemon
        let started: RivetDaemon.Started
        let home: Home
        let lines: LinesBox

        init(_ limits: RivetBackendLimits) throws {
            home = try Home()
            let run = home.path + "/run/rivet"
            try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            var configuration = try home.inProcessConfiguration()
            configuration.backendLimits = limits
            let lines = LinesBox()
            self.lines = lines
            daemon = RivetDaemon(configuration: configuration, log: RivetDaemonLog(level: .debug, journal: false, sink: { lines.add($0) }))
            started = try daemon.start()
        }

        func pair(_ name: String) throws -> RivetCompanionCredential {
            let store = try RivetDevicePairingStore(path: home.registry)
            defer { store.close() }
            let credential = PairingCredential(bytes: try SecureRandom.bytes(32))!
            let device = RivetDevicePairedDevice(
                deviceID: DeviceID(bytes: try SecureRandom.bytes(16))!, displayName: try RivetDeviceName(name),
                applicationID: try RivetApplicationID(testApplication), serverFingerprint: started.fingerprint,
                scopes: [try RivetDeviceScope("viewer")], created: SystemClock().wallClockNow, lastSeen: nil)
            try store.insertPaired(device, verifier: credential.verifier)
            return try RivetCompanionCredential(
                deviceID: device.deviceID, credential: credential, serverFingerprint: started.fingerprint,
                applicationID: device.applicationID, serverAddress: "127.0.0.1:\(started.port)")
        }

        func raw() async throws -> RawSession { try await RawSession.open(try pair("Phone"), port: started.port) }

        func waitForLog(_ fragment: String, timeout: Duration = .seconds(20)) async throws {
            try await eventually("the log line `\(fragment)`", timeout: timeout) { self.lines.text.contains(fragment) }
        }

        func finish() {
            daemon.stop()
            home.remove()
        }
    }

    static func withLocal(_ limits: RivetBackendLimits, _ body: (Local) async throws -> Void) async throws {
        let local = try Local(limits)
        defer { local.finish() }
        try await body(local)
    }

    /// A call payload of about `size` bytes (valid JSON).
    static func padded(_ game: String, _ size: Int) -> String {
        #"{"game-id":"\#(game)","pad":""# + String(repeating: "x", count: size) + #""}"#
    }

    @Test("a call past the deadline is answered rivet.backend-timeout, one in time is answered, the session carries on")
    func callTimeout() async throws {
        try await Self.withLocal(RivetBackendLimits(callDeadline: .seconds(5))) { local in
            let raw = try await local.raw()
            defer { raw.close() }
            // Well within the deadline: answered by the backend.
            #expect(try await raw.call(1, "current-score", #"{"game-id":"slow:100"}"#).kind == .result)
            // Past it (the backend would answer after 30 s).
            let late = try await raw.call(2, "current-score", #"{"game-id":"slow:30000"}"#)
            #expect(late.kind == .error && late.name == "rivet.backend-timeout" && late.requestID == 2, "\(late)")
            try await local.waitForLog("did not answer request")
            // The backend got a cancel (its late answer never comes); the session still works.
            #expect(try await raw.call(3, "current-score", #"{"game-id":"after"}"#).kind == .result)
            #expect(try await raw.isQuiet(for: .milliseconds(500)))
        }
    }

    @Test("a backend that stops reading its stdin is restarted by the watchdog, its calls failing rivet.backend-unavailable")
    func stallWatchdog() async throws {
        try await Self.withLocal(RivetBackendLimits(stallTimeout: .seconds(1))) { local in
            let raw = try await local.raw()
            defer { raw.close() }
            #expect(try await raw.call(1, "current-score", #"{"game-id":"warm"}"#).kind == .result)
            let firstPID = try #require(local.daemon.backendPID)
            try await raw.send(.call(2, name: "current-score", payload: Array(#"{"game-id":"deaf"}"#.utf8)))
            // More than the pipe holds, so bytes wait in rivetd for a backend that reads none.
            try await raw.send(.call(3, name: "current-score", payload: Array(Self.padded("big", 300_000).utf8)))
            var failed: Set<UInt64> = []
            for _ in 0..<2 {
                let answer = try #require(try await raw.next(timeout: .seconds(30)))
                #expect(answer.name == "rivet.backend-unavailable", "\(answer)")
                failed.insert(answer.requestID.rawValue)
            }
            #expect(failed == [2, 3])
            try await local.waitForLog("has read none of the")
            #expect(local.lines.text.components(separatedBy: "has read none of the").count == 2)
            // A new backend serves the same session.
            try await local.waitForLog("backend restarted")
            #expect(local.daemon.backendPID != firstPID)
            #expect(try await raw.call(4, "current-score", #"{"game-id":"again"}"#).kind == .result)
        }
    }

    @Test("bytes queued for a deaf backend are bounded per session: past the bound a request gets rivet.busy")
    func queueBound() async throws {
        let bound = 256 * 1024
        try await Self.withLocal(RivetBackendLimits(maxQueuedBytesPerSession: bound)) { local in
            let raw = try await local.raw()
            let other = try await local.raw()
            defer {
                raw.close()
                other.close()
            }
            try await raw.send(.call(1, name: "current-score", payload: Array(#"{"game-id":"deaf"}"#.utf8)))
            // 100 KB each: the pipe takes the first 64 KiB, rivetd queues the rest up to the bound.
            for id in 2...8 {
                try await raw.send(.call(RVT1RequestID(UInt64(id)), name: "current-score", payload: Array(Self.padded("q\(id)", 100_000).utf8)))
            }
            var busy: [UInt64] = []
            while let answer = try? await raw.next(timeout: .seconds(2)) {
                #expect(answer.name == "rivet.busy", "\(answer)")
                busy.append(answer.requestID.rawValue)
            }
            // 7 × 100 KB is 700 KB: at least the last ones are refused, the first is queued.
            #expect(!busy.isEmpty && !busy.contains(2), "busy: \(busy)")
            #expect(busy.count <= 5, "busy: \(busy)")
            #expect(local.lines.text.contains("the bound is \(bound)"))
            // Another session has its own bound: its small request is queued, not refused.
            try await other.send(.call(1, name: "current-score", payload: Array(#"{"game-id":"x"}"#.utf8)))
            #expect(try await other.isQuiet(for: .milliseconds(500)))
        }
    }

    @Test("the queue bound admits a request that reaches it exactly and refuses one byte more")
    func queueBoundEdge() {
        let limits = RivetBackendLimits(maxQueuedBytesPerSession: 1000)
        #expect(limits.admitsQueued(900, adding: 100))
        #expect(!limits.admitsQueued(900, adding: 101))
        #expect(limits.admitsQueued(0, adding: 1000))
        #expect(!limits.admitsQueued(0, adding: 1001))
        #expect(RivetBackendLimits() == RivetBackendLimits(callDeadline: .seconds(60), stallTimeout: .seconds(10), maxQueuedBytesPerSession: 4 << 20))
    }
}
