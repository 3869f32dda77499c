import Synchronization

// Provenance: the Rastrillo seed extracts a CoalescedRunner from Eleven/Ocho's LChatCore (commit
// 000b882c) under MPL-2.0. This is a reimplementation of the behaviour the seed describes (the
// rules below), not a copy of that source; like the rest of this package it is MPL-2.0 (LICENSE).

/// Coalesces bursts of calls to one operation (a refresh of one inbox, one account) into as
/// few passes as can serve them all, and never lets a caller go before a pass that started
/// after its call has finished.
///
/// Rules:
/// - A call while the runner is idle starts a pass at once.
/// - Calls while a pass runs queue one trailing pass; however many arrive, they share it.
///   Calls while that trailing pass runs queue another one, and so on.
/// - Every caller waits until the pass that covers its call completes: the running pass when
///   it started one, the trailing pass when it arrived mid-pass (the running pass may have
///   read its data before the call). A caller never resumes before its data was fetched.
/// - The closure of the call that found the runner idle supplies every pass until the runner
///   is idle again; later callers' closures are not run. Do not mix different operations in
///   one runner. Handle errors within the closure.
/// - Cancelling a caller does not cancel the shared work: the pass it started or queued still
///   runs for everyone else. The cancelled caller returns at once, without waiting for that
///   pass (check `Task.isCancelled` after `run`); a caller that is already cancelled when it
///   calls still starts or queues its pass, then returns at once.
/// - Calling the same runner from inside its own pass deadlocks: the inner call waits for a
///   pass that cannot start before the current one ends.
///
/// Passes run in a task the runner starts (not in any caller's task), so they inherit neither
/// a caller's cancellation nor its actor; a pass that must run on an actor marks its closure
/// (`{ @MainActor in … }`).
public final class CoalescedRunner: Sendable {
    private struct State {
        /// The callers, each waiting for the pass number of its tag to complete.
        var calls = CancellableWaiters<Void, UInt64>()
        /// The number of the pass running now, or `nil` when the runner is idle.
        var runningPass: UInt64?
        var completedPasses: UInt64 = 0
        var trailingPassQueued = false
    }

    private let state = Mutex(State())

    /// An idle runner.
    public init() {}

    /// Passes completed since the runner was created.
    public var completedPasses: UInt64 { state.withLock { $0.completedPasses } }

    /// Callers waiting now, for the running pass or the trailing one.
    public var waitingCallers: Int {
        state.withLock { $0.calls.waitingCount }
    }

    /// Runs `operation` now if the runner is idle, or queues the trailing pass if it is busy,
    /// and returns when the pass that covers this call has completed (or at once when the
    /// calling task is cancelled; the pass still runs).
    public func run(_ operation: @escaping @Sendable () async -> Void) async {
        let id = state.withLock { $0.calls.announce() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (startsPass, returnsNow) = state.withLock { state -> (Bool, Bool) in
                    let pass: UInt64
                    let startsPass: Bool
                    if let running = state.runningPass {
                        pass = running + 1
                        state.trailingPassQueued = true
                        startsPass = false
                    } else {
                        pass = state.completedPasses + 1
                        state.runningPass = pass
                        startsPass = true
                    }
                    return (startsPass, !state.calls.wait(id, pass, on: continuation))
                }
                if startsPass {
                    Task { await self.drain(operation) }
                }
                if returnsNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.calls.cancel(id) }?.resume()
        }
    }

    /// Runs passes until no trailing pass is queued, resuming each pass's callers when it ends.
    private func drain(_ operation: @Sendable () async -> Void) async {
        while true {
            await operation()
            let (finished, more) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                guard let pass = state.runningPass else { return ([], false) }
                state.completedPasses = pass
                let finished = state.calls.removeWaiting { $0 <= pass }
                if state.trailingPassQueued {
                    state.trailingPassQueued = false
                    state.runningPass = pass + 1
                    return (finished, true)
                }
                state.runningPass = nil
                return (finished, false)
            }
            for continuation in finished { continuation.resume() }
            if !more { return }
        }
    }
}
