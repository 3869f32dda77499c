import Foundation
import RivetPairing
import RivetRegistry
import RivetWire
import TestSupport
import Testing
import ToolTestSupport

/// `rivet-pair --set-scopes` against the real rivetd: a device's live session holds the new
/// scopes from its next frame, with no reconnection (issue 29, "A device's whole life").
@Suite(.serialized) struct SetScopesTests {
    /// Runs rivet-pair in the daemon's home, off the pool.
    static func rivetPair(_ daemon: Daemon, _ arguments: [String]) async throws -> ToolRun {
        try await ToolProcess.runOffPool("rivet-pair", arguments, environment: daemon.home.environment)
    }

    /// The scopes the registry holds for `id`.
    static func registryScopes(_ daemon: Daemon, _ id: DeviceID) throws -> [String] {
        let store = try RivetDevicePairingStore(path: daemon.home.registry)
        defer { store.close() }
        return try store.list().first { $0.deviceID == id }?.scopes.map(\.name).sorted() ?? []
    }

    /// The controller's refresh of `game` (the backend emits score-changed, then answers), then a
    /// barrier on `session`: its call `barrier` is answered after any event the refresh sent it.
    /// Returns the frames `session` got before that answer.
    static func refresh(
        _ game: String, by controller: RawSession, id: UInt64, then session: RawSession, barrier: (UInt64, String, String)
    ) async throws -> [RVT1Frame] {
        #expect(try await controller.call(id, "refresh-score", #"{"game-id":"\#(game)"}"#).kind == .result)
        try await session.send(.call(RVT1RequestID(barrier.0), name: barrier.1, payload: Array(barrier.2.utf8)))
        var before: [RVT1Frame] = []
        while let frame = try await session.next() {
            if frame.requestID == RVT1RequestID(barrier.0) { return before }
            before.append(frame)
        }
        throw TestFailure("the session ended before the barrier call was answered")
    }

    @Test("--set-scopes narrows a live session from its next frame (calls, state, events), then widens it again, without a reconnection")
    func narrowAndWidenLiveSession() async throws {
        try await withDaemon(try Home()) { daemon in
            let phone = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            let session = try await daemon.raw(phone)
            let controller = try await daemon.raw(try daemon.pairDirectly(name: "Desk", scopes: ["controller"]))
            defer {
                session.close()
                controller.close()
            }
            // As paired (viewer): the call and the state read are allowed, and the event arrives.
            #expect(try await session.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            try await session.send(.stateRead(RVT1RequestID(2), key: "home-team"))
            #expect(try await session.next()?.kind == .result)
            let seen = try await Self.refresh("cup", by: controller, id: 1, then: session, barrier: (3, "current-score", #"{"game-id":"a"}"#))
            #expect(seen.map(\.kind) == [.event] && seen.first?.name == "score-changed", "\(seen)")

            // Narrowed to controller: the very next frame is checked against the new scopes.
            let narrow = try await Self.rivetPair(daemon, ["--set-scopes", phone.deviceID.hex, "--scope", "controller"])
            #expect(narrow.status == 0, "\(narrow.stderr)")
            #expect(narrow.stdout == "\(phone.deviceID.hex) (Phone) has scopes controller\n")
            #expect(narrow.stderrLines == ["rivet-pair: note: changed through rivetd: 1 live session holds the new scopes from the next frame"])
            let refused = try await session.call(4, "current-score", #"{"game-id":"a"}"#)
            #expect(refused.kind == .error && refused.name == "rivet.forbidden" && refused.requestID == RVT1RequestID(4))
            try await session.send(.stateRead(RVT1RequestID(5), key: "home-team"))
            #expect(try await session.next()?.name == "rivet.forbidden")
            // What controller grants now works on the same connection.
            #expect(try await session.call(6, "refresh-score", #"{"game-id":"b"}"#).kind == .result)
            // Events and state changes outside the scopes no longer reach it: nothing comes before
            // the answer to a call made after the other device's refresh and state write.
            try await controller.send(.stateWrite(RVT1RequestID(2), key: "home-team", payload: Array(#""Tigers""#.utf8)))
            #expect(try await controller.next()?.kind == .result)
            let filtered = try await Self.refresh("cup", by: controller, id: 3, then: session, barrier: (7, "refresh-score", #"{"game-id":"c"}"#))
            #expect(filtered.isEmpty, "\(filtered)")
            #expect(try Self.registryScopes(daemon, phone.deviceID) == ["controller"])
            try await daemon.waitForLog(
                "changed the scopes of device \(phone.deviceID) (\"Phone\") from [viewer] to [controller]; 1 live session hold the new ones from their next frame")

            // Widened to both, with --json: allowed again, and the events come back.
            let widen = try await Self.rivetPair(daemon, ["--set-scopes", phone.deviceID.hex, "--scope", "viewer", "--scope", "controller", "--json"])
            #expect(widen.status == 0, "\(widen.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(widen.stdout.utf8)) as? [String: Any])
            #expect(object["device_id"] as? String == phone.deviceID.hex && object["scopes"] as? [String] == ["controller", "viewer"])
            #expect(try await session.call(8, "current-score", #"{"game-id":"a"}"#).kind == .result)
            let back = try await Self.refresh("cup", by: controller, id: 4, then: session, barrier: (9, "current-score", #"{"game-id":"a"}"#))
            #expect(back.map(\.kind) == [.event], "\(back)")

            // The same set again changes nothing and says so.
            let same = try await Self.rivetPair(daemon, ["--set-scopes", phone.deviceID.hex, "--scope", "controller", "--scope", "viewer"])
            #expect(same.status == 0)
            #expect(same.stderrLines == ["rivet-pair: note: \(phone.deviceID.hex) already has exactly these scopes: nothing was changed"])
        }
    }

    @Test("through rivetd, an undeclared scope is exit 2 naming the declared ones and changes nothing; an unknown device is exit 1")
    func undeclaredScopeAndUnknownDevice() async throws {
        try await withDaemon(try Home()) { daemon in
            let phone = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            let session = try await daemon.raw(phone)
            defer { session.close() }
            let undeclared = try await Self.rivetPair(daemon, ["--set-scopes", phone.deviceID.hex, "--scope", "viewer", "--scope", "admin"])
            #expect(undeclared.status == 2)
            #expect(undeclared.stdout == "")
            #expect(undeclared.stderrLines.count == 1, "\(undeclared.stderr)")
            #expect(undeclared.stderr.contains("admin") && undeclared.stderr.contains("(declared: controller, viewer)"), "\(undeclared.stderr)")
            #expect(undeclared.stderr.contains("nothing was changed"))
            #expect(try Self.registryScopes(daemon, phone.deviceID) == ["viewer"])
            // The session keeps its scopes.
            #expect(try await session.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)

            let unknown = String(repeating: "ab", count: 16)
            let missing = try await Self.rivetPair(daemon, ["--set-scopes", unknown, "--scope", "viewer"])
            #expect(missing.status == 1)
            #expect(missing.stdout == "")
            #expect(missing.stderrLines == ["rivet-pair: no paired device has ID \(unknown); nothing was changed (see 'rivet-pair --list')"], "\(missing.stderr)")
            let json = try await Self.rivetPair(daemon, ["--set-scopes", unknown, "--scope", "viewer", "--json"])
            #expect(json.status == 1)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: Any])
            #expect(object["error"] as? String == "unknown-device")
        }
    }
}
