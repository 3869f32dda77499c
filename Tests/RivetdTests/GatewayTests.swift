import Foundation
import Glibc
import RivetCompanion
import RivetDevice
import RivetPairing
import RivetSession
import RivetTransport
import RivetWire
import TestSupport
import Testing
import ToolTestSupport

/// The gateway end to end: the real rivetd and test backend, devices resuming over real TLS.
@Suite(.serialized) struct GatewayTests {
    @Test("an allowed RPC makes a typed round trip, and --sessions lists the live session")
    func roundTripAndSessions() async throws {
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Kitchen Tablet", scopes: ["viewer"])
            let session = try await daemon.companion(credential)
            #expect(try await session.client.send(CurrentScore(gameID: "semi")).gameID == "semi")
            #expect(try await session.client.read(homeTeam) == "Lions")

            let list = try await offPool {
                try ToolProcess.run("rivet-pair", ["--sessions", "--json"], environment: daemon.home.environment)
            }
            #expect(list.status == 0)
            #expect(list.stdoutLines.count == 1)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any])
            #expect(object["device_id"] as? String == credential.deviceID.hex)
            #expect(object["name"] as? String == "Kitchen Tablet")
            #expect(object["scopes"] as? [String] == ["viewer"])
            #expect(object["pending_calls"] as? Int == 0)
            #expect((object["peer"] as? String)?.hasPrefix("127.0.0.1:") == true)
            let table = try await offPool { try ToolProcess.run("rivet-pair", ["--sessions"], environment: daemon.home.environment) }
            #expect(table.stdoutLines.first?.hasPrefix("SESSION") == true)
            #expect(table.stdout.contains("Kitchen Tablet"))
            await session.close()
            try await eventually("the session to close") { try await daemon.request(.sessions)["sessions"]?.array?.isEmpty == true }
        }
    }

    @Test("the typed client writes and reads state, receives events and state changes, and gets rivet.forbidden as a remote error")
    func typedClient() async throws {
        try await withDaemon(try Home()) { daemon in
            let viewer = try await daemon.companion(try daemon.pairDirectly(name: "Viewer", scopes: ["viewer"]))
            let controller = try await daemon.companion(try daemon.pairDirectly(name: "Controller", scopes: ["controller"]))
            var events = viewer.client.events.makeAsyncIterator()
            try await controller.client.write(homeTeam, "Tigers")
            let change = try #require(await events.next())
            #expect(change.kind == .stateChange && change.name == "home-team" && String(decoding: change.payload, as: UTF8.self) == #""Tigers""#)
            #expect(try await viewer.client.read(homeTeam) == "Tigers")
            _ = try await controller.client.send(RefreshScore(gameID: "derby"))
            let event = try #require(await events.next())
            #expect(event.kind == .event && event.name == "score-changed")
            let score = try JSONDecoder().decode(Score.self, from: Data(event.payload))
            #expect(score.gameID == "derby")
            do {
                _ = try await viewer.client.send(RefreshScore(gameID: "derby"))
                Issue.record("a viewer may not refresh")
            } catch let error as RivetRemoteError {
                #expect(error.code == "rivet.forbidden" && error.message == "this session may not use that name")
            }
            await viewer.close()
            await controller.close()
        }
    }

    @Test("a forbidden, an unexported and an unknown RPC or state key get the same answer, byte for byte")
    func forbiddenAndUnknownIndistinguishable() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Viewer", scopes: ["viewer"]))
            defer { raw.close() }
            let id = RVT1RequestID(7)
            let probes: [RVT1Frame] = [
                .call(id, name: "refresh-score", payload: Array(#"{"game-id":"a"}"#.utf8)),  // exported, not granted
                .call(id, name: "reset-scores", payload: Array("{}".utf8)),  // declared, not exported
                .call(id, name: "no-such-rpc", payload: Array("{}".utf8)),  // unknown
                .stateWrite(id, key: "home-team", payload: Array(#""Tigers""#.utf8)),  // readable, not writable
                .stateRead(id, key: "no-such-key"),  // unknown key
            ]
            var answers: [[UInt8]] = []
            for probe in probes {
                try await raw.send(probe)
                let answer = try #require(try await raw.next())
                #expect(answer.kind == .error && answer.name == "rivet.forbidden" && answer.requestID == id)
                answers.append(answer.encoded)
            }
            #expect(Set(answers).count == 1)
            // The session is still usable, and nothing forbidden reached the backend.
            #expect(try await raw.call(8, "current-score", #"{"game-id":"a"}"#).kind == .result)
            #expect(!daemon.log.contains("reached the backend"))
        }
    }

    @Test("state reads, writes and changes, and events, reach only the sessions whose scopes grant them")
    func stateAndEventsByScope() async throws {
        try await withDaemon(try Home()) { daemon in
            let viewer = try await daemon.raw(try daemon.pairDirectly(name: "Viewer", scopes: ["viewer"]))
            let controller = try await daemon.raw(try daemon.pairDirectly(name: "Controller", scopes: ["controller"]))
            defer {
                viewer.close()
                controller.close()
            }
            // The controller writes; the viewer sees the change and reads the new value.
            try await controller.send(.stateWrite(RVT1RequestID(1), key: "home-team", payload: Array(#""Tigers""#.utf8)))
            let written = try #require(try await controller.next())
            #expect(written.kind == .result && written.text == "{}")
            let change = try #require(try await viewer.next())
            #expect(change.kind == .stateChange && change.name == "home-team" && change.text == #""Tigers""#)
            let read = try await viewer.call(1, "current-score", #"{"game-id":"x"}"#)
            #expect(read.kind == .result)
            try await viewer.send(.stateRead(RVT1RequestID(2), key: "home-team"))
            #expect(try await viewer.next()?.text == #""Tigers""#)
            // Neither may do the other's part.
            try await controller.send(.stateRead(RVT1RequestID(2), key: "home-team"))
            #expect(try await controller.next()?.name == "rivet.forbidden")
            try await viewer.send(.stateWrite(RVT1RequestID(3), key: "home-team", payload: Array(#""Bears""#.utf8)))
            #expect(try await viewer.next()?.name == "rivet.forbidden")

            // The controller's refresh makes the backend emit score-changed: only the viewer gets it.
            let refreshed = try await controller.call(3, "refresh-score", #"{"game-id":"cup"}"#)
            #expect(refreshed.kind == .result && refreshed.requestID == RVT1RequestID(3))
            let event = try #require(try await viewer.next())
            #expect(event.kind == .event && event.name == "score-changed" && event.text.contains(#""game-id":"cup""#))
            // Frames reach a session in order: had the controller been sent the event or the state
            // change, they would have come before this answer.
            let later = try await controller.call(4, "refresh-score", #"{"game-id":"cup"}"#)
            #expect(later.kind == .result && later.requestID == RVT1RequestID(4))
            #expect(try await viewer.next()?.kind == .event)
        }
    }

    @Test("a cancel answers rivet.cancelled at once and the backend's late answer is dropped")
    func cancel() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Viewer", scopes: ["viewer"]))
            defer { raw.close() }
            try await raw.send(.call(RVT1RequestID(1), name: "current-score", payload: Array(#"{"game-id":"slow:3000"}"#.utf8)))
            try await eventually("the call to be pending") {
                try await daemon.request(.sessions)["sessions"]?.array?.first?["pending_calls"]?.integer == 1
            }
            let started = ContinuousClock.now
            try await raw.send(.cancel(RVT1RequestID(1)))
            let answer = try #require(try await raw.next())
            #expect(answer.kind == .error && answer.name == "rivet.cancelled" && answer.requestID == RVT1RequestID(1))
            #expect(ContinuousClock.now - started < .seconds(1) + schedulingSlack)
            // Only the new call's answer follows: nothing more for request 1.
            let next = try await raw.call(2, "current-score", #"{"game-id":"b"}"#)
            #expect(next.requestID == RVT1RequestID(2) && next.kind == .result)
            #expect(try await daemon.request(.sessions)["sessions"]?.array?.first?["pending_calls"]?.integer == 0)
        }
    }

    @Test("revoking during a call fails the call and closes the session within 100 ms; the device cannot resume")
    func revokeDuringCall() async throws {
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Lost Phone", scopes: ["viewer"])
            let other = try await daemon.raw(try daemon.pairDirectly(name: "Other", scopes: ["viewer"]))
            defer { other.close() }
            let session = try await daemon.companion(credential)
            let call = Task { try await session.client.send(CurrentScore(gameID: "slow:5000")) }
            try await eventually("the call to be pending") {
                try await daemon.request(.sessions)["sessions"]?.array?.contains { $0["pending_calls"]?.integer == 1 } == true
            }
            let control = try daemon.control()
            let started = ContinuousClock.now
            let response = try await offPool { try control.send(.revoke(credential.deviceID)) }
            let failure = await call.result
            let elapsed = ContinuousClock.now - started
            #expect(response["sessions_closed"]?.integer == 1)
            // A failure, not the slow answer (a result after 5 s), shows the revocation ended the call.
            #expect(elapsed < .milliseconds(100) + schedulingSlack, "the call failed \(elapsed) after the revocation started")
            #expect(throws: RivetDeviceError.connectionClosed) { try failure.get() }
            if case .failure(let error) = failure { #expect("\(error)".contains("rivet.revoked")) }
            await session.close()

            await #expect(throws: RivetClientError.credentialRejected) { try await daemon.companion(credential) }
            // The other device's session is untouched.
            #expect(try await other.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            #expect(PairingTests.logged(daemon.log, "revoked device \(credential.deviceID) (\"Lost Phone\"); closed its live session from PEER"))
        }
    }

    @Test("rivet-pair --revoke goes through the running daemon and the live session ends with rivet.revoked")
    func revokeThroughRivetPair() async throws {
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            let raw = try await daemon.raw(credential)
            defer { raw.close() }
            let run = try await offPool {
                try ToolProcess.run("rivet-pair", ["--revoke", credential.deviceID.hex], environment: daemon.home.environment)
            }
            #expect(run.status == 0)
            #expect(run.stdout == "revoked \(credential.deviceID.hex) (Phone)\n")
            #expect(run.stderrLines == ["rivet-pair: note: revoked through rivetd: 1 live session closed"])
            let farewell = try #require(try await raw.next())
            #expect(farewell.kind == .error && farewell.requestID == .none && farewell.name == "rivet.revoked")
            #expect(try await raw.next() == nil)
            // The log names the device and the address of the session it closed.
            #expect(PairingTests.logged(daemon.log, "info: revoked device \(credential.deviceID) (\"Phone\"); closed its live session from PEER"), "\(daemon.log)")
        }
    }

    @Test("a backend crash fails the pending call with rivet.backend-unavailable, keeps the session, and restarts the backend")
    func backendCrashAndRestart() async throws {
        try await withDaemon(try Home(), backendEnvironment: ["RIVET_TEST_BACKEND_CRASH_AFTER": "2"]) { daemon in
            let session = try await daemon.companion(try daemon.pairDirectly(name: "Phone", scopes: ["viewer"]))
            #expect(try await session.client.send(CurrentScore(gameID: "one")).gameID == "one")
            let crash = await outcome { try await session.client.send(CurrentScore(gameID: "two")) }
            #expect(throws: RivetRemoteError.self) { try crash.get() }
            if case .failure(let error as RivetRemoteError) = crash { #expect(error.code == "rivet.backend-unavailable") }
            try await daemon.waitForLog("was killed by signal 9 (SIGKILL); pending calls failed with rivet.backend-unavailable; restarting in 0.")
            // The same session works again once the backend is back.
            var answered: Score?
            try await eventually("the restarted backend to answer") {
                answered = try? await session.client.send(CurrentScore(gameID: "three"))
                return answered != nil
            }
            #expect(answered?.gameID == "three")
            #expect(daemon.log.contains("backend restarted"))
            #expect(daemon.log.components(separatedBy: "backend: rivet-test-backend started").count == 3)
            await session.close()
        }
    }

    @Test("a backend whose exit is seen before the end of its stdout leaves no descriptor behind")
    func backendExitBeforeEndOfFile() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Phone", scopes: ["viewer"]))
            defer { raw.close() }
            #expect(try await raw.call(1, "current-score", #"{"game-id":"before"}"#).kind == .result)
            let before = try Self.pipes(of: daemon.process.pid)
            // The backend dies while a grandchild still holds its stdout and stderr, so rivetd
            // reaps it before it reads the end of file: the stdin writer must end all the same.
            let failed = try await raw.call(2, "current-score", #"{"game-id":"orphan"}"#)
            #expect(failed.kind == .error && failed.name == "rivet.backend-unavailable")
            try await daemon.waitForLog("backend restarted")
            var id: UInt64 = 3
            try await eventually("the new backend to answer") {
                id += 1
                return try await raw.call(id, "current-score", #"{"game-id":"after"}"#).kind == .result
            }
            // The old backend's three pipes are closed and the new one's open: as many as before.
            var after: [String] = []
            try await eventually("the old backend's pipes to close", timeout: .seconds(10)) {
                after = try Self.pipes(of: daemon.process.pid)
                return after.count == before.count
            }
            #expect(after.count == before.count, "before: \(before), after: \(after)")
        }
    }

    /// The pipes `pid` holds open (their /proc link targets).
    static func pipes(of pid: pid_t) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap {
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
            return target?.hasPrefix("pipe:") == true ? target : nil
        }.sorted()
    }

    @Test("a backend that breaks RVT1 is stopped, its pending call fails, and a new backend serves the same session")
    func backendBreaksProtocol() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Phone", scopes: ["viewer"]))
            defer { raw.close() }
            let failed = try await raw.call(1, "current-score", #"{"game-id":"garbage"}"#)
            #expect(failed.kind == .error && failed.name == "rivet.backend-unavailable" && failed.requestID == RVT1RequestID(1))
            try await daemon.waitForLog("broke RVT1 on its stdout (rvt1.bad-magic")
            try await daemon.waitForLog("backend restarted")
            var answer: RVT1Frame?
            var id: UInt64 = 2
            try await eventually("the new backend to answer") {
                answer = try await raw.call(id, "current-score", #"{"game-id":"again"}"#)
                id += 1
                return answer?.kind == .result
            }
        }
    }

    @Test("stopping escalates to SIGTERM and SIGKILL for a backend that does not exit, and still exits 0")
    func stubbornBackend() async throws {
        let daemon = try await Daemon.start(try Home())
        defer { daemon.home.remove() }
        let raw = try await daemon.raw(try daemon.pairDirectly(name: "Phone", scopes: ["viewer"]))
        defer { raw.close() }
        #expect(try await raw.call(1, "current-score", #"{"game-id":"stubborn"}"#).kind == .result)
        let started = ContinuousClock.now
        #expect(try await daemon.stop() == 0)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed > .seconds(4) && elapsed < .seconds(10), "stopping took \(elapsed)")
        let log = daemon.log
        #expect(log.contains("did not exit; sending SIGTERM"))
        #expect(log.contains("did not exit; sending SIGKILL"))
        #expect(log.contains("was killed by signal 9 (SIGKILL)"))
        #expect(log.hasSuffix("rivetd: info: stopped\n"))
    }

    @Test("the 9th session is refused while 8 are open, and admitted once one closes")
    func ninthSessionRefused() async throws {
        try await withDaemon(try Home()) { daemon in
            // Eight devices (one device holds at most two sessions; see SessionSlotsTests).
            var sessions: [RawSession] = []
            for index in 0..<8 {
                sessions.append(try await daemon.raw(try daemon.pairDirectly(name: "Busy \(index)", scopes: ["viewer"])))
            }
            let credential = try daemon.pairDirectly(name: "Ninth", scopes: ["viewer"])
            await #expect(throws: RivetClientError.rejected(.serverBusy)) { try await daemon.raw(credential) }
            #expect(daemon.log.contains("8 sessions are open, the gateway's maximum"))
            // docs/protocol.md says so, and lists no RVT1 code for it among the session errors.
            let rvt1 = try ProtocolDocumentTests.part("rvt1").split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(rvt1.contains("the ninth device's `Resume` is answered `Reject(serverBusy)`"))
            #expect(!rvt1.contains("| `rivet.too-many-sessions` |"))
            sessions.removeFirst().close()
            var ninth: RawSession?
            try await eventually("a slot to free up") {
                ninth = try? await daemon.raw(credential)
                return ninth != nil
            }
            #expect(try await ninth?.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            ninth?.close()
            for session in sessions { session.close() }
        }
    }

    @Test("eight idle sessions hold no thread of their own: one session loop drives them all")
    func idleSessionsHoldNoThreads() async throws {
        try await withDaemon(try Home()) { daemon in
            // Eight devices: one device holds at most two sessions.
            var credentials: [RivetCompanionCredential] = []
            for index in 0..<8 { credentials.append(try daemon.pairDirectly(name: "Idle \(index)", scopes: ["viewer"])) }
            func threads() throws -> [String] {
                let task = "/proc/\(daemon.process.pid)/task"
                return try FileManager.default.contentsOfDirectory(atPath: task).compactMap {
                    try? String(contentsOfFile: "\(task)/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                }
            }
            var sessions = [try await daemon.raw(credentials[0])]
            #expect(try await sessions[0].call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            let withOne = try threads()
            for index in 1..<8 { sessions.append(try await daemon.raw(credentials[index])) }
            for (index, session) in sessions.enumerated() {
                #expect(try await session.call(UInt64(10 + index), "current-score", #"{"game-id":"a"}"#).kind == .result)
            }
            // The connection threads that ran the handshakes have ended.
            try await eventually("the connection threads to end") { try threads().filter { $0 == "rivet.listener" }.count == 1 }
            let withEight = try threads()
            #expect(withEight.filter { $0 == "rivet.sessions" }.count == 1)
            // Seven more sessions, no more threads (one of slack for a pool thread coming or going).
            #expect(withEight.count <= withOne.count + 1, "threads with one session: \(withOne), with eight: \(withEight)")
            for session in sessions { session.close() }
        }
    }

    @Test("the 64th pending call is forwarded and the 65th refused with rivet.busy")
    func sixtyFifthPendingCall() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Eager", scopes: ["viewer"]))
            defer { raw.close() }
            var burst: [UInt8] = []
            let encoder = RVT1Encoder()
            for id in 1...65 {
                burst += try encoder.encode(.call(RVT1RequestID(UInt64(id)), name: "current-score", payload: Array(#"{"game-id":"slow:4000"}"#.utf8)))
            }
            try await raw.sendBytes(burst)
            let refusal = try #require(try await raw.next(timeout: .seconds(3)))
            #expect(refusal.requestID == RVT1RequestID(65) && refusal.name == "rivet.busy")
            #expect(try await daemon.request(.sessions)["sessions"]?.array?.first?["pending_calls"]?.integer == 64)
            // Once the slow answers come, the session takes calls again.
            var answered = 0
            while answered < 64 {
                let frame = try #require(try await raw.next(timeout: .seconds(10)))
                #expect(frame.kind == .result)
                answered += 1
            }
            #expect(try await raw.call(66, "current-score", #"{"game-id":"a"}"#).kind == .result)
        }
    }

    @Test("a 512 KiB payload passes each way and one byte more is refused, the session staying open")
    func payloadEdges() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Big", scopes: ["viewer"]))
            defer { raw.close() }
            func arguments(size: Int) -> String {
                let head = #"{"game-id":"big","pad":""#
                return head + String(repeating: "x", count: size - head.utf8.count - 2) + #""}"#
            }
            #expect(arguments(size: 524_288).utf8.count == 524_288)
            let atLimit = try await raw.call(1, "current-score", arguments(size: 524_288))
            #expect(atLimit.kind == .result && atLimit.requestID == RVT1RequestID(1))
            let overLimit = try await raw.call(2, "current-score", arguments(size: 524_289))
            #expect(overLimit.kind == .error && overLimit.name == "rivet.request-too-large" && overLimit.requestID == RVT1RequestID(2))

            let largest = try await raw.call(3, "current-score", #"{"game-id":"echo:524288"}"#)
            #expect(largest.kind == .result && largest.payload.count == 524_288)
            let tooLarge = try await raw.call(4, "current-score", #"{"game-id":"echo:524289"}"#)
            #expect(tooLarge.kind == .error && tooLarge.name == "rivet.response-too-large")
            #expect(try await raw.call(5, "current-score", #"{"game-id":"a"}"#).kind == .result)
        }
    }

    @Test("a device that stops reading is closed at its queue bound and the daemon's memory stays bounded")
    func stalledReader() async throws {
        try await withDaemon(try Home()) { daemon in
            let healthy = try await daemon.raw(try daemon.pairDirectly(name: "Healthy", scopes: ["viewer"]))
            let stalled = try await daemon.raw(try daemon.pairDirectly(name: "Stalled", scopes: ["viewer"]))
            defer {
                healthy.close()
                stalled.close()
            }
            #expect(try await healthy.call(1, "current-score", #"{"game-id":"warm:echo"}"#).kind == .result)
            let before = daemon.residentKiB
            // Ask for 500 KiB answers, 64 at a time, and never read one. Unbounded, the daemon would
            // hold every answer (hundreds of MiB); bounded, it closes the session at 4 MiB queued.
            let encoder = RVT1Encoder()
            var id: UInt64 = 0
            for _ in 0..<40 {
                var batch: [UInt8] = []
                for _ in 0..<64 {
                    id += 1
                    batch += try encoder.encode(.call(RVT1RequestID(id), name: "current-score", payload: Array(#"{"game-id":"echo:512000"}"#.utf8)))
                }
                do { try await stalled.sendBytes(batch) } catch { break }
                if daemon.log.contains("rivet.outgoing-queue-full") { break }
            }
            try await daemon.waitForLog("rivet.outgoing-queue-full")
            let growthKiB = daemon.residentKiB - before
            #expect(growthKiB < 48 * 1024, "rivetd grew by \(growthKiB) KiB")
            #expect(try await healthy.call(2, "current-score", #"{"game-id":"b"}"#).kind == .result)
        }
    }

    @Test("the backend's stderr goes to the log, one line per line")
    func backendStderr() async throws {
        try await withDaemon(try Home()) { daemon in
            let raw = try await daemon.raw(try daemon.pairDirectly(name: "Phone", scopes: ["viewer"]))
            defer { raw.close() }
            #expect(try await raw.call(1, "current-score", #"{"game-id":"stderr:hello from the backend"}"#).kind == .result)
            try await daemon.waitForLog("rivetd: info: backend: hello from the backend\n")
        }
    }

    @Test("SIGTERM closes sessions with rivet.shutdown, stops the backend, removes the socket and exits 0")
    func sigtermStopsGracefully() async throws {
        let home = try Home()
        let daemon = try await Daemon.start(home)
        defer { home.remove() }
        let raw = try await daemon.raw(try daemon.pairDirectly(name: "Phone", scopes: ["viewer"]))
        defer { raw.close() }
        let backendLine = try #require(daemon.log.split(separator: "\n").first { $0.contains("backend started:") })
        let backendPID = try #require(Int32(backendLine.split(separator: "pid ").last?.filter(\.isNumber) ?? ""))
        #expect(try await daemon.stop() == 0)
        let farewell = try #require(try await raw.next())
        #expect(farewell.kind == .error && farewell.requestID == .none && farewell.name == "rivet.shutdown")
        #expect(try await raw.next() == nil)
        #expect(kill(backendPID, 0) == -1 && errno == ESRCH)
        #expect(!FileManager.default.fileExists(atPath: home.socket))
        #expect(daemon.log.hasSuffix("rivetd: info: stopped\n"))
    }
}

/// The outcome of an async throwing body.
func outcome<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}
