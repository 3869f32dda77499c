import RastrilloCore
import Synchronization
import TestSupport
import Testing

/// What the tests need of a runner, so the same scenarios can run against a naive one.
protocol RefreshRunner: Sendable {
    func run(_ operation: @escaping @Sendable () async -> Void) async
    var waitingCallers: Int { get }
}

extension CoalescedRunner: RefreshRunner {}

/// The runner this type exists to replace: "if a pass is running, await that pass". A caller
/// that arrives after the running pass fetched its data resumes when that pass ends, before
/// any pass has fetched data as new as its call.
final class NaiveRunner: RefreshRunner {
    private struct State {
        var task: Task<Void, Never>?
        var waiting = 0
    }
    private let state = Mutex(State())

    var waitingCallers: Int { state.withLock { $0.waiting } }

    func run(_ operation: @escaping @Sendable () async -> Void) async {
        let task = state.withLock { state in
            state.waiting += 1
            if let task = state.task { return task }
            let task = Task { await operation() }
            state.task = task
            return task
        }
        await task.value
        state.withLock { state in
            state.waiting -= 1
            if state.task == task { state.task = nil }
        }
    }
}

/// A server whose data changes, and passes that fetch it, hold until the test releases them,
/// then publish what they fetched.
final class RefreshServer: Sendable {
    private struct State {
        var version = 0
        var published = -1
        var started = 0
        var released: Set<Int> = []
        var releaseAll = false
        var held: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelledInsidePass = false
    }
    private let state = Mutex(State())

    var version: Int { state.withLock { $0.version } }
    var published: Int { state.withLock { $0.published } }
    var passesStarted: Int { state.withLock { $0.started } }
    var sawCancellationInsidePass: Bool { state.withLock { $0.cancelledInsidePass } }

    /// Changes the server's data; returns the new version.
    @discardableResult
    func edit() -> Int { state.withLock { state in state.version += 1; return state.version } }

    /// The refresh: fetch, hold until released, publish.
    func refresh() async {
        let (pass, fetched) = state.withLock { state in
            state.started += 1
            return (state.started, state.version)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let go = state.withLock { state in
                if state.releaseAll || state.released.contains(pass) { return true }
                state.held[pass] = continuation
                return false
            }
            if go { continuation.resume() }
        }
        let cancelled = Task.isCancelled
        state.withLock { state in
            state.published = max(state.published, fetched)
            if cancelled { state.cancelledInsidePass = true }
        }
    }

    func release(pass: Int) {
        let continuation = state.withLock { state in
            state.released.insert(pass)
            return state.held.removeValue(forKey: pass)
        }
        continuation?.resume()
    }

    func releaseEveryPass() {
        let held = state.withLock { state in
            state.releaseAll = true
            defer { state.held = [:] }
            return Array(state.held.values)
        }
        for continuation in held { continuation.resume() }
    }
}

/// A flag set from another task.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// The failure the runner prevents: B calls after pass 1 fetched its data; B must not resume
/// until a pass that fetched data at least as new as B's call has published it.
/// Returns whether every caller found its data published when its call returned.
func callersSeeTheirData(with runner: some RefreshRunner) async throws -> Bool {
    let server = RefreshServer()
    let a = Task {
        let asked = server.version
        await runner.run { await server.refresh() }
        return server.published >= asked
    }
    try await eventually("pass 1 fetched") { server.passesStarted == 1 }
    let editedVersion = server.edit()
    let b = Task {
        await runner.run { await server.refresh() }
        return server.published >= editedVersion
    }
    try await eventually("both callers wait") { runner.waitingCallers == 2 }
    server.release(pass: 1)
    let aSawItsData = await a.value
    server.releaseEveryPass()
    let bSawItsData = await b.value
    return aSawItsData && bSawItsData
}

@Suite struct CoalescedRunnerTests {
    @Test func aCallerArrivingMidPassWaitsForThePassAfterIt() async throws {
        #expect(try await callersSeeTheirData(with: CoalescedRunner()))
    }

    @Test func theScenarioCatchesTheNaiveRunner() async throws {
        #expect(try await callersSeeTheirData(with: NaiveRunner()) == false)
    }

    @Test func anIdleCallRunsAPassAtOnceAndWaitsForIt() async {
        let runner = CoalescedRunner()
        let server = RefreshServer()
        server.releaseEveryPass()
        for expected in 1...3 {
            server.edit()
            await runner.run { await server.refresh() }
            #expect(server.published == server.version)
            #expect(runner.completedPasses == UInt64(expected))
        }
        #expect(runner.waitingCallers == 0)
    }

    @Test func aBurstDuringAPassSharesOneTrailingPass() async throws {
        let runner = CoalescedRunner()
        let server = RefreshServer()
        let first = Task { await runner.run { await server.refresh() } }
        try await eventually("pass 1 started") { server.passesStarted == 1 }
        server.edit()
        let burst = Task {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        await runner.run { await server.refresh() }
                        return server.published >= 1
                    }
                }
                return await group.reduce(true) { $0 && $1 }
            }
        }
        try await eventually("51 callers wait") { runner.waitingCallers == 51 }
        server.releaseEveryPass()
        await first.value
        #expect(await burst.value)
        #expect(server.passesStarted == 2)
        #expect(runner.completedPasses == 2)
    }

    @Test func aCallDuringTheTrailingPassQueuesAnother() async throws {
        let runner = CoalescedRunner()
        let server = RefreshServer()
        let returned = (a: Flag(), b: Flag(), c: Flag())
        let a = Task {
            await runner.run { await server.refresh() }
            returned.a.set()
        }
        try await eventually("pass 1 started") { server.passesStarted == 1 }
        let b = Task {
            await runner.run { await server.refresh() }
            returned.b.set()
        }
        try await eventually("b waits") { runner.waitingCallers == 2 }
        server.release(pass: 1)
        try await eventually("pass 2 started") { server.passesStarted == 2 }
        await a.value
        let edited = server.edit()
        let c = Task {
            await runner.run { await server.refresh() }
            returned.c.set()
            return server.published >= edited
        }
        try await eventually("b and c wait") { runner.waitingCallers == 2 }
        #expect(!returned.b.isSet)
        server.release(pass: 2)
        await b.value
        #expect(!returned.c.isSet)
        #expect(server.passesStarted == 3)
        server.release(pass: 3)
        #expect(await c.value)
        #expect(runner.completedPasses == 3)
    }

    @Test func theFirstCallersClosureSuppliesEveryPass() async throws {
        let runner = CoalescedRunner()
        let server = RefreshServer()
        let otherClosureRan = Flag()
        let a = Task { await runner.run { await server.refresh() } }
        try await eventually("pass 1 started") { server.passesStarted == 1 }
        let b = Task { await runner.run { otherClosureRan.set() } }
        try await eventually("b waits") { runner.waitingCallers == 2 }
        server.releaseEveryPass()
        await a.value
        await b.value
        #expect(server.passesStarted == 2)
        #expect(!otherClosureRan.isSet)
        // Once idle, the next caller's closure supplies the passes.
        await runner.run { otherClosureRan.set() }
        #expect(otherClosureRan.isSet)
    }

    @Test func aCancelledCallerReturnsAtOnceAndTheSharedPassStillRuns() async throws {
        let runner = CoalescedRunner()
        let server = RefreshServer()
        let a = Task { await runner.run { await server.refresh() } }
        try await eventually("pass 1 started") { server.passesStarted == 1 }
        let edited = server.edit()
        let bReturned = Flag()
        let b = Task {
            await runner.run { await server.refresh() }
            bReturned.set()
        }
        try await eventually("b waits") { runner.waitingCallers == 2 }
        b.cancel()
        await b.value
        #expect(bReturned.isSet)
        #expect(runner.completedPasses == 0)
        #expect(runner.waitingCallers == 1)
        // Cancelling the caller that started the pass does not cancel the pass either.
        a.cancel()
        await a.value
        #expect(runner.waitingCallers == 0)
        server.releaseEveryPass()
        try await eventually("the trailing pass B queued ran") { runner.completedPasses == 2 }
        #expect(server.published == edited)
        #expect(!server.sawCancellationInsidePass)
    }

    @Test func anAlreadyCancelledCallerStillStartsItsPassAndReturnsAtOnce() async throws {
        let runner = CoalescedRunner()
        let server = RefreshServer()
        let started = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await runner.run { await server.refresh() }
            return runner.completedPasses
        }
        #expect(await started.value == 0)
        try await eventually("the pass started") { server.passesStarted == 1 }
        #expect(runner.waitingCallers == 0)
        server.releaseEveryPass()
        try await eventually("the pass completed") { runner.completedPasses == 1 }
    }

    @Test func manyCallersUnderContentionAlwaysSeeTheirData() async {
        let runner = CoalescedRunner()
        let server = RefreshServer()
        server.releaseEveryPass()
        let allSawTheirData = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    var ok = true
                    for _ in 0..<25 {
                        let asked = server.edit()
                        await runner.run {
                            await Task.yield()
                            await server.refresh()
                            await Task.yield()
                        }
                        ok = ok && server.published >= asked
                    }
                    return ok
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(allSawTheirData)
        #expect(runner.waitingCallers == 0)
        #expect(runner.completedPasses <= 400)
        #expect(server.published == server.version)
    }
}
