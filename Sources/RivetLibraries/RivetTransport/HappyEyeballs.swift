/// The decisions of connection racing over an ordered list of addresses (RFC 8305, "happy
/// eyeballs"), with neither sockets nor a clock: the driver tells it what happened and when
/// (as time since the race began), and does what it answers.
///
/// - The first address starts at once; the next one `stagger` (250 ms) after the last start,
///   or at once when an attempt fails; the first TCP connection to complete wins, and every
///   other attempt still running is abandoned (closed).
/// - Over the winner the driver runs the TLS handshake. A final failure there (the server's key
///   is not the pin) ends the whole race: no other address is tried. Any other handshake
///   failure counts as that address failing, and the race goes on with the addresses not tried
///   yet (and those abandoned when it won).
/// - When every address has failed, the race has failed.
package struct HappyEyeballs: Sendable {
    /// What the driver must do.
    package enum Action: Equatable, Sendable {
        /// Start a TCP connection to address `index`.
        case start(Int)
        /// Close the attempt to address `index`.
        case abandon(Int)
        /// The TCP connection to `index` is the winner: run the TLS handshake over it.
        case handshake(Int)
        /// `index` is connected and its handshake passed: the race is won.
        case succeeded(Int)
        /// Every address failed, or a final failure stopped the race.
        case failed
    }

    /// What happened to an attempt.
    package enum Event: Equatable, Sendable {
        /// The TCP connection to `index` failed.
        case connectFailed(Int)
        /// The TCP connection to `index` completed.
        case connected(Int)
        /// The handshake over `index` passed.
        case handshakeSucceeded(Int)
        /// The handshake over `index` failed; `final` for a failure that ends the race (a pin
        /// mismatch).
        case handshakeFailed(Int, final: Bool)
    }

    private enum State: Equatable, Sendable {
        case waiting, connecting, failed, handshaking, succeeded
    }

    /// The default delay before the next address starts (250 ms).
    package static let defaultStagger: Duration = .milliseconds(250)

    /// The delay before the next address starts while earlier ones are still connecting.
    package let stagger: Duration
    private var states: [State]
    private var lastStart: Duration?
    private var over = false

    /// A race over `count` addresses (at least 1).
    package init(count: Int, stagger: Duration = Self.defaultStagger) {
        precondition(count >= 1, "a race needs an address")
        self.stagger = stagger
        states = Array(repeating: .waiting, count: count)
    }

    /// True once the race succeeded or failed.
    package var isOver: Bool { over }

    /// When the driver must call ``tick(at:)`` next (the next staggered start), or `nil` when
    /// only an event can move the race on.
    package var nextStart: Duration? {
        guard !over, !states.contains(.handshaking), states.contains(.waiting), states.contains(.connecting),
            let lastStart
        else { return nil }
        return lastStart + stagger
    }

    /// Starts the race at `now`: the first address.
    package mutating func begin(at now: Duration) -> [Action] {
        guard lastStart == nil, !over else { return [] }
        return startNext(at: now)
    }

    /// The staggered start, when it is due at `now`.
    package mutating func tick(at now: Duration) -> [Action] {
        guard let due = nextStart, now >= due else { return [] }
        return startNext(at: now)
    }

    /// Moves the race on after `event` at `now`.
    package mutating func handle(_ event: Event, at now: Duration) -> [Action] {
        guard !over else { return [] }
        switch event {
        case .connectFailed(let index):
            guard states[index] == .connecting else { return [] }
            states[index] = .failed
            return afterFailure(at: now)
        case .connected(let index):
            guard states[index] == .connecting, !states.contains(.handshaking) else { return [] }
            states[index] = .handshaking
            var actions: [Action] = [.handshake(index)]
            for other in states.indices where states[other] == .connecting {
                states[other] = .waiting
                actions.append(.abandon(other))
            }
            return actions
        case .handshakeSucceeded(let index):
            guard states[index] == .handshaking else { return [] }
            states[index] = .succeeded
            over = true
            return [.succeeded(index)]
        case .handshakeFailed(let index, let final):
            guard states[index] == .handshaking else { return [] }
            states[index] = .failed
            if final {
                over = true
                return abandonAll() + [.failed]
            }
            return afterFailure(at: now)
        }
    }

    /// After a failure: the next address at once, or, with none left and none running, the end.
    private mutating func afterFailure(at now: Duration) -> [Action] {
        if states.contains(.waiting) { return startNext(at: now) }
        if states.contains(.connecting) { return [] }
        over = true
        return [.failed]
    }

    private mutating func startNext(at now: Duration) -> [Action] {
        guard let index = states.firstIndex(of: .waiting) else { return [] }
        states[index] = .connecting
        lastStart = now
        return [.start(index)]
    }

    private mutating func abandonAll() -> [Action] {
        var actions: [Action] = []
        for index in states.indices where states[index] == .connecting {
            states[index] = .waiting
            actions.append(.abandon(index))
        }
        return actions
    }
}
