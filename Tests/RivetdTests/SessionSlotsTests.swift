import Foundation
import Glibc
import RivetCompanion
import RivetSession
import RivetTransport
import RivetWire
import Synchronization
import TestSupport
import Testing
import ToolTestSupport

/// Session slots no one can hog (issue 27, finding 2): at most two sessions per device, a new
/// resume beyond that replaces the device's oldest session, and one device resuming over and
/// over never keeps another device out.
@Suite(.serialized) struct SessionSlotsTests {
    @Test("one device resuming 8 times without a hello keeps no other device out; its oldest sessions get rivet.replaced")
    func oneDeviceCannotTakeEverySlot() async throws {
        try await withDaemon(try Home()) { daemon in
            let hog = try daemon.pairDirectly(name: "Hog", scopes: ["viewer"])
            let other = try daemon.pairDirectly(name: "Other", scopes: ["viewer"])
            var hogs: [RawSession] = []
            for _ in 0..<8 { hogs.append(try await daemon.raw(hog, hello: false)) }
            // Before the per-device cap, this resume was answered Reject(serverBusy).
            let served = try await daemon.raw(other)
            #expect(try await served.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            served.close()
            // The six oldest were replaced, each told so before its connection closed.
            for session in hogs.prefix(6) {
                let farewell = try #require(try await session.next())
                #expect(farewell.kind == .error && farewell.requestID == .none && farewell.name == "rivet.replaced")
                #expect(try await session.next() == nil)
            }
            let sessions = try await daemon.request(.sessions)["sessions"]?.array ?? []
            #expect(sessions.filter { $0["device_id"]?.string == hog.deviceID.hex }.count <= 2, "\(sessions)")
            #expect(daemon.log.components(separatedBy: "rivet.replaced").count - 1 == 6, "\(daemon.log)")
            for session in hogs { session.close() }
        }
    }

    @Test("a device keeps two sessions (the limit); a third replaces the oldest and the other two keep working")
    func twoSessionsPerDeviceThenTheOldestIsReplaced() async throws {
        try await withDaemon(try Home()) { daemon in
            let credential = try daemon.pairDirectly(name: "Phone", scopes: ["viewer"])
            let first = try await daemon.raw(credential)
            let second = try await daemon.raw(credential)
            // At the limit: both are served, neither is replaced.
            #expect(try await first.call(1, "current-score", #"{"game-id":"a"}"#).kind == .result)
            #expect(try await second.call(2, "current-score", #"{"game-id":"a"}"#).kind == .result)
            #expect(!daemon.log.contains("rivet.replaced"))
            // One past: the oldest goes.
            let third = try await daemon.raw(credential)
            let farewell = try #require(try await first.next())
            #expect(farewell.kind == .error && farewell.requestID == .none && farewell.name == "rivet.replaced")
            #expect(try await second.call(3, "current-score", #"{"game-id":"a"}"#).kind == .result)
            #expect(try await third.call(4, "current-score", #"{"game-id":"a"}"#).kind == .result)
            for session in [first, second, third] { session.close() }
        }
    }
}
