import RastrilloCore
import TestSupport
import Testing

func origin(_ text: String) -> NativeOrigin { try! NativeOrigin(text) }

/// Reads changes from `stream` until one satisfies `predicate`, failing after 10 s.
func awaitChange(
    _ stream: AsyncStream<ConnectivityChange>, _ what: String, _ predicate: @escaping @Sendable (ConnectivityChange) -> Bool
) async throws -> ConnectivityChange {
    let found = await withTaskGroup(of: ConnectivityChange?.self) { group in
        group.addTask {
            for await change in stream where predicate(change) { return change }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(10))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
    return try #require(found, "no change where \(what) within 10 s")
}

@Suite struct NativeConnectivityStateTests {
    let remote = origin("https://example.org")
    let local = origin("http://127.0.0.1:8080")

    @Test func theLoopbackPathServesLoopbackOrigins() {
        let connectivity = NativeConnectivity(path: .loopbackOnly, clock: ManualClock())
        #expect(connectivity.isOffline(remote))
        #expect(!connectivity.isOffline(local))
        connectivity.update(path: .unsatisfied)
        #expect(connectivity.isOffline(local))
        connectivity.update(path: NetworkPath(isSatisfied: true, isLoopbackUp: false))
        #expect(!connectivity.isOffline(remote))
        #expect(connectivity.isOffline(local))
    }

    @Test func aServerThatFailedIsOfflineUntilItAnswers() async throws {
        let connectivity = NativeConnectivity(path: .satisfied, clock: ManualClock())
        let changes = connectivity.changes
        #expect(connectivity.serverReachable(remote) == nil)
        #expect(!connectivity.isOffline(remote))
        connectivity.report(offlineFailure: remote)
        #expect(connectivity.serverReachable(remote) == false)
        #expect(connectivity.isOffline(remote))
        #expect(!connectivity.isOffline(origin("https://other.example")))
        connectivity.report(response: remote)
        #expect(connectivity.serverReachable(remote) == true)
        #expect(!connectivity.isOffline(remote))
        let change = try await awaitChange(changes, "the server is reachable") { _ in true }
        #expect(change == ConnectivityChange(path: .satisfied, reachableOrigin: remote))
    }

    @Test func onlyAServerThatHadFailedFiresAChangeWhenItAnswers() async throws {
        let connectivity = NativeConnectivity(path: .satisfied, clock: ManualClock())
        let changes = connectivity.changes
        connectivity.report(response: remote)
        connectivity.report(response: remote)
        connectivity.report(offlineFailure: local)
        connectivity.report(response: local)
        let change = try await awaitChange(changes, "any change") { _ in true }
        #expect(change.reachableOrigin == local)
    }

    @Test func thePathIsDownWhateverTrafficProved() {
        let connectivity = NativeConnectivity(path: .satisfied, clock: ManualClock())
        connectivity.report(response: remote)
        connectivity.update(path: .loopbackOnly)
        #expect(connectivity.isOffline(remote))
        connectivity.report(response: remote)
        #expect(connectivity.isOffline(remote))
    }

    @Test func aPathChangeForgetsWhatTrafficProvedAndFiresAChange() async throws {
        let connectivity = NativeConnectivity(path: .satisfied, clock: ManualClock())
        let changes = connectivity.changes
        connectivity.report(offlineFailure: remote)
        connectivity.update(path: .satisfied)
        #expect(connectivity.serverReachable(remote) == false)
        connectivity.update(path: .loopbackOnly)
        #expect(connectivity.serverReachable(remote) == nil)
        connectivity.update(path: .satisfied)
        #expect(!connectivity.isOffline(remote))
        #expect(connectivity.path == .satisfied)
        let first = try await awaitChange(changes, "a path change") { _ in true }
        #expect(first == ConnectivityChange(path: .loopbackOnly, reachableOrigin: nil))
        let second = try await awaitChange(changes, "a path change") { _ in true }
        #expect(second == ConnectivityChange(path: .satisfied, reachableOrigin: nil))
    }

    @Test func everySubscriberSeesEveryChange() async throws {
        let connectivity = NativeConnectivity(path: .satisfied, clock: ManualClock())
        let first = connectivity.changes
        let second = connectivity.changes
        connectivity.update(path: .unsatisfied)
        #expect(try await awaitChange(first, "down") { _ in true }.path == .unsatisfied)
        #expect(try await awaitChange(second, "down") { _ in true }.path == .unsatisfied)
    }

    @Test func changesEndWhenTheInstanceIsReleased() async {
        var connectivity: NativeConnectivity? = NativeConnectivity(path: .satisfied, clock: ManualClock())
        let changes = connectivity!.changes
        connectivity = nil
        var count = 0
        for await _ in changes { count += 1 }
        #expect(count == 0)
    }

    @Test func waitReturnsEarlyOnAChange() async throws {
        let clock = ManualClock()
        let connectivity = NativeConnectivity(path: .satisfied, clock: clock)
        let waiting = Task { await connectivity.wait(upTo: .seconds(30)) }
        try await eventually("the wait sleeps") { clock.deadlines == [.seconds(30)] }
        connectivity.update(path: .loopbackOnly)
        #expect(await waiting.value == true)
        try await eventually("the timer is gone") { clock.deadlines.isEmpty }
    }

    @Test func waitReturnsFalseWhenTheTimeRunsOut() async throws {
        let clock = ManualClock()
        let connectivity = NativeConnectivity(path: .satisfied, clock: clock)
        let waiting = Task { await connectivity.wait(upTo: .seconds(2)) }
        try await eventually("the wait sleeps") { clock.deadlines == [.seconds(2)] }
        clock.advance(by: .milliseconds(1999))
        #expect(clock.deadlines == [.seconds(2)])
        clock.advance(by: .milliseconds(1))
        #expect(await waiting.value == false)
    }

    @Test func aServerBecomingReachableEndsAWait() async throws {
        let clock = ManualClock()
        let connectivity = NativeConnectivity(path: .satisfied, clock: clock)
        connectivity.report(offlineFailure: remote)
        let waiting = Task { await connectivity.wait(upTo: .seconds(30)) }
        try await eventually("the wait sleeps") { !clock.deadlines.isEmpty }
        connectivity.report(response: remote)
        #expect(await waiting.value == true)
    }

    @Test func cancelledWaitsReturnFalse() async throws {
        let clock = ManualClock()
        let connectivity = NativeConnectivity(path: .satisfied, clock: clock)
        let timed = Task { await connectivity.wait(upTo: .seconds(30)) }
        let untimed = Task { await connectivity.waitForChange() }
        try await eventually("the wait sleeps") { !clock.deadlines.isEmpty }
        timed.cancel()
        untimed.cancel()
        #expect(await timed.value == false)
        #expect(await untimed.value == false)
        let alreadyCancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await connectivity.waitForChange()
        }
        #expect(await alreadyCancelled.value == false)
    }

    @Test func waitForChangeHasNoTimer() async throws {
        let clock = ManualClock()
        let connectivity = NativeConnectivity(path: .unsatisfied, clock: clock)
        let returned = Flag()
        let waiting = Task {
            defer { returned.set() }
            return await connectivity.waitForChange()
        }
        try await Task.sleep(for: .milliseconds(20))
        #expect(clock.deadlines.isEmpty)
        #expect(!returned.isSet)
        // The waiter counts changes from its call; keep changing until it has seen one.
        var paths: [NetworkPath] = [.satisfied, .unsatisfied]
        try await eventually("the waiter saw a change") {
            connectivity.update(path: paths[0])
            paths.reverse()
            return returned.isSet
        }
        #expect(await waiting.value == true)
    }
}
