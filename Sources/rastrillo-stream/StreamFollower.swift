import CommandLineKit
import RastrilloCore
import RastrilloCLI
import RastrilloStreams
import Synchronization

/// The reconnect loop of rastrillo-stream: opens the stream, turns its lines into events,
/// reconnects with `Last-Event-ID` paced by `NativeReconnect`, and decides the exit status.
struct StreamFollower {
    let client: ClientArguments
    let raw: Bool
    let once: Bool
    let snapshot: String?
    /// `--idle-timeout`: how long an open stream may stay quiet; nil for no limit.
    let idleTimeout: Duration?

    /// Follows the stream until a permanent failure, `--once`'s first end, or cancellation.
    /// - Throws: `CancellationError` when interrupted; output errors.
    func run() async throws -> ExitStatus {
        let connectivity = NativeConnectivity.shared
        let server = client.origin.serverOrigin
        let reconnect = NativeReconnect(connectivity: connectivity, origin: server)
        let output = StreamOutput()
        let json = !raw
        let watcher = Task {
            for await _ in connectivity.changes {
                try? output.reachability(offline: connectivity.isOffline(server), json: json)
            }
        }
        defer { watcher.cancel() }
        var lastEventID = ""
        var retryFloor: Duration?
        var credential = client.credential
        var firstAttempt = true
        while true {
            if !firstAttempt { credential = try client.reloadCredential() }
            firstAttempt = false
            let http = client.client(
                credential: credential, observer: connectivity.trafficObserver, streamIdleTimeout: idleTimeout)
            var headers = client.headers
            if !lastEventID.isEmpty, let field = try? NativeHeaderField(name: "Last-Event-ID", value: lastEventID) {
                headers.append(field)
            }
            var parser = EventStreamParser(lastEventID: lastEventID)
            // --raw prints lines as they come, but still follows their `id` and `retry` fields,
            // so a reconnect resumes with Last-Event-ID and waits as the server asked.
            let rawFields = Mutex(EventStreamAssembler(lastEventID: lastEventID))
            let snapshot = self.snapshot
            let onOpen: @Sendable (NativeResponse) async throws -> Void = { response in
                reconnect.opened()
                try output.reachability(offline: false, json: json)
                if json { try output.open(status: response.status) }
                if let snapshot {
                    let state = try await http.responseDetails(NativeRequest(snapshot))
                    try state.requireSuccess()
                    if json { try output.snapshot(state) }
                }
            }
            let reason: String
            do {
                if raw {
                    try await http.stream(
                        client.target, headers: headers, onOpen: onOpen, onLineBytes: { line in
                            try output.raw(line)
                            rawFields.withLock { $0.consume(line) { _, _, _ in } }
                        },
                        onIdle: { try output.flush() })
                } else {
                    try await http.stream(
                        client.target, headers: headers, parser: &parser, onOpen: onOpen,
                        onEvent: { type, data, id in try output.event(type: type, data: data, id: id) },
                        onIdle: { try output.flush() })
                }
                try output.finishConnection()
                reason = "the server ended the stream"
            } catch {
                if Task.isCancelled || error is CancellationError {
                    output.discard()
                    throw CancellationError()
                }
                if error is OutputClosed || error is OutputError { throw error }
                try output.finishConnection()
                (lastEventID, retryFloor) = resumePoint(parser, rawFields, retryFloor)
                guard let failure = error as? NativeClientError,
                    failure.retryClass == .offline || failure.retryClass == .transient
                else {
                    return FailureReport.emit(error, json: false)
                }
                try output.reachability(offline: connectivity.isOffline(server), json: json)
                if once { return FailureReport.emit(error, json: false) }
                reconnect.failed(failure)
                try await pause(reconnect, floor: retryFloor, reason: failure.message, output: output, json: json)
                continue
            }
            (lastEventID, retryFloor) = resumePoint(parser, rawFields, retryFloor)
            if once { return .ok }
            try await pause(reconnect, floor: retryFloor, reason: reason, output: output, json: json)
        }
    }

    /// The last event ID and reconnection time a connection left: from the parser, or with
    /// `--raw` from the fields its printed lines carried.
    private func resumePoint(
        _ parser: EventStreamParser, _ rawFields: borrowing Mutex<EventStreamAssembler>, _ retryFloor: Duration?
    ) -> (String, Duration?) {
        if raw {
            return rawFields.withLock { ($0.lastEventID, $0.reconnectionTime ?? retryFloor) }
        }
        return (parser.lastEventID, parser.reconnectionTime ?? retryFloor)
    }

    /// Waits before the next attempt: the longer of the pacer's pause and the server's last
    /// `retry:` value, announced by a reconnect line first.
    private func pause(
        _ reconnect: NativeReconnect, floor: Duration?, reason: String, output: StreamOutput, json: Bool
    ) async throws {
        let planned = reconnect.plannedDelay()
        let wait = max(planned, floor ?? .zero)
        if json { try output.reconnect(wait: wait, reason: reason) }
        let start = ContinuousClock.now
        try await reconnect.pause()
        if let floor {
            let rest = floor - (ContinuousClock.now - start)
            if rest > .zero { try await Task.sleep(for: rest) }
        }
    }
}
