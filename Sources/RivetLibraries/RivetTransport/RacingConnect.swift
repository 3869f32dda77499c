import ByteText
import Foundation
import OpenSSLKit
import RivetPairing
import RivetSession
import SystemKit
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// Connects to the first of several endpoints that answers, as ``HappyEyeballs`` decides, and
/// runs the TLS handshake over the winner. Every address that fails, or that has not answered
/// when the next one starts, is reported once through `report` (one short line for a person).
/// Returns the connection, its socket and the endpoint it reached.
func connectRacing(
    _ endpoints: [HostPort], context: TLSClientContext, deadline: ContinuousClock.Instant,
    stagger: Duration = HappyEyeballs.defaultStagger, clock: any RivetClock, report: (String) -> Void
) throws(RivetClientError) -> (TLSConnection, Int32, HostPort) {
    // Each endpoint's addresses (a name may resolve to several), in order.
    var targets: [(endpoint: HostPort, family: Int32, address: [UInt8], text: String)] = []
    var unresolved: RivetClientError?
    for endpoint in endpoints {
        switch resolve(host: endpoint.host, port: endpoint.port, passive: false) {
        case .success(let found):
            for entry in found {
                let text = entry.address.withUnsafeBytes { raw in
                    let (host, port) = describe(raw.baseAddress!)
                    return joinHostPort(host, port)
                }
                targets.append((endpoint, entry.family, entry.address, text))
            }
        case .failure(let failure):
            unresolved = RivetClientError.invalidAddress.with(failure.message)
            if endpoints.count > 1 { report("could not resolve \(endpoint): \(failure.message); trying the link's other addresses") }
        }
    }
    guard !targets.isEmpty else {
        throw unresolved ?? RivetClientError.invalidAddress.with("the link has no address to connect to")
    }

    let origin = clock.now
    func elapsed() -> Duration { clock.now - origin }
    var race = HappyEyeballs(count: targets.count, stagger: stagger)
    var sockets: [Int: Int32] = [:]
    var events: [HappyEyeballs.Event] = []
    var lastError: RivetClientError?
    /// Why each failed attempt failed, for its line (`Connection refused`).
    var reasons: [Int: String] = [:]
    defer { for fd in sockets.values { close(fd) } }

    /// What the person reads after an attempt ended: which address the race tries next.
    func next() -> String {
        let running = sockets.keys.sorted().map { targets[$0].text }
        return running.isEmpty ? "no address left" : "still trying \(running.joined(separator: ", "))"
    }

    var actions = race.begin(at: elapsed())
    while true {
        for action in actions {
            switch action {
            case .start(let index):
                let target = targets[index]
                let fd: Int32
                do {
                    fd = try FileDescriptor.socket(family: target.family, type: Int32(SOCK_STREAM.rawValue), nonBlocking: true).take()
                } catch {
                    reasons[index] = "socket: \(error.reason)"
                    lastError = RivetClientError.connectionFailed.with("\(target.text): \(reasons[index]!)")
                    events.append(.connectFailed(index))
                    continue
                }
                let error = target.address.withUnsafeBytes { FileDescriptor.connect(fd, to: $0) } ?? 0
                sockets[index] = fd
                if error == 0 {
                    events.append(.connected(index))
                } else if !connectIsPending(error) {
                    events.append(.connectFailed(index))
                    reasons[index] = String(cString: strerror(error))
                    lastError = RivetClientError.connectionFailed.with(
                        "connect to \(target.text) failed: \(String(cString: strerror(error)))")
                }
            case .abandon(let index):
                if let fd = sockets.removeValue(forKey: index) { close(fd) }
            case .handshake(let index):
                guard let fd = sockets.removeValue(forKey: index) else { continue }
                setNoDelay(fd)
                let target = targets[index]
                do {
                    let connection = try TLSConnection(socket: fd, context: context, clock: clock)
                    try connection.handshake(deadline: deadline)
                    return (connection, fd, target.endpoint)
                } catch {
                    let failure = RivetClientConnector.classify(error, during: "the TLS handshake with \(target.text)")
                    lastError = failure
                    let final = failure == .pinMismatch || failure == .timedOut
                    if !final { report("could not reach \(target.text): \(failure.message); trying the link's other addresses") }
                    events.append(.handshakeFailed(index, final: final))
                }
            case .succeeded:
                break  // returned above, with the connection
            case .failed:
                throw lastError ?? RivetClientError.connectionFailed.with("no address of the link could be reached")
            }
        }
        actions = []
        if !events.isEmpty {
            let event = events.removeFirst()
            if case .connectFailed(let index) = event {
                if let fd = sockets.removeValue(forKey: index) { close(fd) }
                actions = race.handle(event, at: elapsed())
                if endpoints.count > 1 || targets.count > 1 {
                    let reason = reasons[index] ?? "failed"
                    report("could not reach \(targets[index].text): \(reason); \(startedText(actions, targets.map(\.text)) ?? next())")
                }
            } else {
                actions = race.handle(event, at: elapsed())
            }
            continue
        }
        // Wait for an attempt to end, the next staggered start, or the deadline.
        let waitUntil = race.nextStart.map { min(origin + $0, deadline) } ?? deadline
        let order = sockets.keys.sorted()
        var descriptors = order.map { pollfd(fd: sockets[$0]!, events: Int16(POLLOUT), revents: 0) }
        let result: Int
        do {
            result = try Poll.wait(&descriptors, timeout: pollTimeout(until: waitUntil, on: clock))
        } catch {
            throw RivetClientError.connectionFailed.with("poll failed: \(error.reason)")
        }
        if result > 0 {
            for (slot, index) in order.enumerated() where descriptors[slot].revents != 0 {
                var value: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                let error = getsockopt(descriptors[slot].fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 ? value : errno
                if error == 0 {
                    events.append(.connected(index))
                } else {
                    reasons[index] = String(cString: strerror(error))
                    lastError = RivetClientError.connectionFailed.with(
                        "connect to \(targets[index].text) failed: \(reasons[index]!)")
                    events.append(.connectFailed(index))
                }
            }
            continue
        }
        if clock.now >= deadline {
            let waiting = sockets.keys.sorted().map { targets[$0].text }.joined(separator: ", ")
            throw RivetClientError.timedOut.with("connect to \(waiting) did not finish within the setup time")
        }
        let before = Set(sockets.keys)
        actions = race.tick(at: elapsed())
        if let started = startedText(actions, targets.map(\.text)) {
            let silent = before.sorted().map { targets[$0].text }.joined(separator: ", ")
            report("no answer yet from \(silent) after \(stagger.formattedMilliseconds); \(started) as well")
        }
    }
}

/// "trying ADDRESS" for the start among `actions`, or nil.
private func startedText(_ actions: [HappyEyeballs.Action], _ texts: [String]) -> String? {
    for case .start(let index) in actions { return "trying \(texts[index])" }
    return nil
}

extension Duration {
    /// `250 ms`.
    fileprivate var formattedMilliseconds: String {
        let (seconds, attoseconds) = components
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }
}
