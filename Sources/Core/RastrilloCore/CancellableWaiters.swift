/// Calls that wait on a continuation and that their task's cancellation may end at any
/// moment: before the call waits (it then returns at once instead of waiting) or while it
/// waits (its cancellation handler resumes it). Kept inside its owner's lock; the
/// continuations it hands back are resumed outside the lock. `Tag` is what the owner notes
/// about each waiting call (``CoalescedRunner``: the pass it waits for).
struct CancellableWaiters<Value, Tag> {
    private enum Entry {
        /// Announced; not waiting yet (the cancellation handler may run first).
        case announced
        /// Cancelled before it waited.
        case cancelledEarly
        /// Waiting.
        case waiting(Tag, CheckedContinuation<Value, Never>)
    }

    private var entries: [UInt64: Entry] = [:]
    private var nextID: UInt64 = 0

    /// Registers a call before it waits; the ID its later steps name it by.
    mutating func announce() -> UInt64 {
        let id = nextID
        nextID += 1
        entries[id] = .announced
        return id
    }

    /// Lets call `id` wait on `continuation`; false, forgetting the call, when its task was
    /// cancelled first (the caller then resumes it at once).
    mutating func wait(_ id: UInt64, _ tag: Tag, on continuation: CheckedContinuation<Value, Never>) -> Bool {
        if case .cancelledEarly = entries[id] {
            entries[id] = nil
            return false
        }
        entries[id] = .waiting(tag, continuation)
        return true
    }

    /// Forgets call `id`, which returns without waiting.
    mutating func forget(_ id: UInt64) { entries[id] = nil }

    /// For call `id`'s cancellation handler: the continuation to resume when the call waits
    /// (the call is forgotten); nil when it does not wait yet (now it never will) or is done.
    mutating func cancel(_ id: UInt64) -> CheckedContinuation<Value, Never>? {
        switch entries[id] {
        case .announced:
            entries[id] = .cancelledEarly
            return nil
        case .waiting(_, let continuation):
            entries[id] = nil
            return continuation
        case .cancelledEarly, nil:
            return nil
        }
    }

    /// How many calls wait now.
    var waitingCount: Int {
        entries.values.count { entry in
            if case .waiting = entry { return true }
            return false
        }
    }

    /// Forgets the waiting calls whose tag `done` accepts (all by default) and returns their
    /// continuations.
    mutating func removeWaiting(where done: (Tag) -> Bool = { _ in true }) -> [CheckedContinuation<Value, Never>] {
        var finished: [CheckedContinuation<Value, Never>] = []
        for (id, entry) in entries {
            if case .waiting(let tag, let continuation) = entry, done(tag) {
                finished.append(continuation)
                entries[id] = nil
            }
        }
        return finished
    }

    /// Forgets every call and returns the continuations of those waiting.
    mutating func removeAll() -> [CheckedContinuation<Value, Never>] {
        defer { entries = [:] }
        return removeWaiting()
    }
}
