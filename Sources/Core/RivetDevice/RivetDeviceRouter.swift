import RivetWire

/// Dispatches incoming calls, state reads and state writes to registered handlers, and turns
/// their outcome into a result or error envelope.
///
/// Registration rejects invalid and duplicate routes. Serving bounds request and response
/// sizes and concurrent calls, checks the protocol version and correlation IDs, and converts
/// *registered* error types into stable code/message pairs; any other error becomes
/// `rivet.internal` without its message (`docs/protocol.md`, "Error codes").
public actor RivetDeviceRouter {
    typealias Handler = @Sendable ([UInt8]) async throws -> [UInt8]

    private struct StateEntry {
        var read: Handler
        var write: Handler?
    }

    /// The bounds the router enforces.
    public nonisolated let configuration: RivetDeviceConfiguration

    private var rpcs: [String: Handler] = [:]
    private var states: [String: StateEntry] = [:]
    private var errorConverters: [(type: ObjectIdentifier, convert: @Sendable (any Error) -> RivetRemoteError?)] = []

    /// Creates an empty router bounded by `configuration`.
    public init(configuration: RivetDeviceConfiguration = .default) {
        self.configuration = configuration
    }

    /// The registered RPC routes, sorted.
    public var routes: [RivetRoute] { rpcs.keys.sorted().map { RivetRoute($0) } }

    /// The registered state keys, sorted.
    public var stateKeys: [RivetRoute] { states.keys.sorted().map { RivetRoute($0) } }

    /// Registers `handler` for `Request.route`: incoming calls decode as `Request`, the handler's
    /// answer is encoded as the result.
    /// - Throws: ``RivetDeviceError/invalidRoute`` or ``RivetDeviceError/duplicateRoute``; the
    ///   router is unchanged then.
    public func register<Request: RivetDeviceRequest>(
        _ type: Request.Type = Request.self,
        handler: @escaping @Sendable (Request) async throws -> Request.Response
    ) throws(RivetDeviceError) {
        try register([.rpc(type, handler: handler)])
    }

    /// Registers several RPC handlers at once, all or nothing: when any route is invalid,
    /// already registered or repeated in `handlers`, nothing is registered.
    /// - Throws: ``RivetDeviceError/invalidRoute`` or ``RivetDeviceError/duplicateRoute`` for the
    ///   first offending route.
    public func register(_ handlers: [RivetDeviceHandler]) throws(RivetDeviceError) {
        var seen = Set<String>()
        for entry in handlers {
            try entry.route.validate()
            guard rpcs[entry.route.name] == nil, seen.insert(entry.route.name).inserted else {
                throw .duplicateRoute(entry.route.name)
            }
        }
        for entry in handlers { rpcs[entry.route.name] = entry.handler }
    }

    /// Registers state `key`: `read` answers state-read frames; `write`, when given, handles
    /// state-write frames (without it writes fail with `rivet.read-only-state`).
    /// - Throws: ``RivetDeviceError/invalidRoute`` or ``RivetDeviceError/duplicateRoute``.
    public func registerState<Value>(
        _ key: RivetStateKey<Value>,
        read: @escaping @Sendable () async throws -> Value,
        write: (@Sendable (Value) async throws -> Void)? = nil
    ) throws(RivetDeviceError) {
        let route = key.route
        try route.validate()
        guard states[route.name] == nil else { throw .duplicateRoute(route.name) }
        var writer: Handler?
        if let write {
            writer = { payload in
                let value = try RequestDecodingFailure.decode(Value.self, from: payload, as: "the value of state key \(route.name)")
                try await write(value)
                return try RivetDeviceJSON.encode(RivetDeviceUnit())
            }
        }
        states[route.name] = StateEntry(
            read: { _ in try RivetDeviceJSON.encode(try await read(), describing: "state \(route)") },
            write: writer)
    }

    /// Registers error type `type`: when a handler throws it, `convert` supplies the code and
    /// message sent to the peer. ``RivetRemoteError`` is always sent as it is. A converted code
    /// that breaks the RVT1 name rules is sent as `rivet.internal`.
    /// - Throws: ``RivetDeviceError/duplicateErrorRegistration`` when `type` is registered.
    public func registerError<Failure: Error>(
        _ type: Failure.Type, as convert: @escaping @Sendable (Failure) -> RivetRemoteError
    ) throws(RivetDeviceError) {
        let identifier = ObjectIdentifier(type)
        guard !errorConverters.contains(where: { $0.type == identifier }) else {
            throw .duplicateErrorRegistration("\(type)")
        }
        errorConverters.append((identifier, { error in (error as? Failure).map(convert) }))
    }

    /// Answers one call, state-read or state-write envelope with its result or error envelope.
    /// Cancelling the calling task cancels the handler and answers `rivet.cancelled`.
    public nonisolated func response(to envelope: RivetDeviceEnvelope) async -> RivetDeviceEnvelope {
        await respond(to: envelope, cancellation: nil)
    }

    /// Serves calls arriving on `transport` until the peer closes it, running up to
    /// ``RivetDeviceConfiguration/maxPendingCalls`` at once, then closes the transport.
    /// Events the peer sends are ignored.
    /// - Throws: why the connection ended when it did not end cleanly: a
    ///   ``RivetDeviceError/protocolViolation`` by the peer (after telling it), or the
    ///   transport's error.
    public nonisolated func serve(_ transport: any RivetDeviceTransport) async throws {
        let connection = RivetDeviceConnection(
            transport: transport, configuration: configuration, router: self, events: nil)
        if let reason = await connection.run() { throw reason }
    }

    // MARK: Dispatch

    private func handler(for envelope: RivetDeviceEnvelope) -> Result<Handler, RivetRemoteError> {
        switch envelope.kind {
        case .call:
            if let handler = rpcs[envelope.name] { return .success(handler) }
            return .failure(RivetRemoteError(
                code: RivetRemoteError.Codes.unknownRoute,
                message: "no handler is registered for route \"\(printable(envelope.name))\""))
        case .stateRead, .stateWrite:
            guard let entry = states[envelope.name] else {
                return .failure(RivetRemoteError(
                    code: RivetRemoteError.Codes.unknownRoute,
                    message: "no state key \"\(printable(envelope.name))\" is registered"))
            }
            if envelope.kind == .stateRead { return .success(entry.read) }
            if let write = entry.write { return .success(write) }
            return .failure(RivetRemoteError(
                code: RivetRemoteError.Codes.readOnlyState,
                message: "state key \"\(envelope.name)\" is read-only"))
        default:
            return .failure(RivetRemoteError(
                code: RivetRemoteError.Codes.protocolViolation,
                message: "a \(envelope.kind) envelope is not a request"))
        }
    }

    private func remoteError(for error: any Error) -> RivetRemoteError {
        if let remote = error as? RivetRemoteError, remote.hasValidCode { return remote }
        if let failure = error as? RequestDecodingFailure {
            return RivetRemoteError(
                code: RivetRemoteError.Codes.invalidRequest,
                message: "the payload does not decode as \(failure.what): \(failure.detail)")
        }
        if error is CancellationError {
            return RivetRemoteError(code: RivetRemoteError.Codes.cancelled, message: "the call was cancelled")
        }
        for converter in errorConverters {
            if let remote = converter.convert(error), remote.hasValidCode { return remote }
        }
        return RivetRemoteError(code: RivetRemoteError.Codes.internal, message: "the handler failed")
    }

    nonisolated func respond(to envelope: RivetDeviceEnvelope, cancellation: CancelSignal?) async -> RivetDeviceEnvelope {
        let id = envelope.correlationID
        func fail(_ code: String, _ message: String) -> RivetDeviceEnvelope {
            .error(id, RivetRemoteError(code: code, message: message))
        }
        guard envelope.version == RivetDeviceEnvelope.currentVersion else {
            return fail(RivetRemoteError.Codes.unsupportedVersion,
                "protocol version \(envelope.version) is not supported; this side speaks \(RivetDeviceEnvelope.currentVersion)")
        }
        guard envelope.payload.count <= configuration.maxRequestBytes else {
            return fail(RivetRemoteError.Codes.requestTooLarge,
                "the request is \(envelope.payload.count) bytes; the limit is \(configuration.maxRequestBytes)")
        }
        let handler: Handler
        switch await self.handler(for: envelope) {
        case .success(let found): handler = found
        case .failure(let error): return .error(id, error)
        }

        enum Outcome: Sendable { case result([UInt8]), failure(any Error), cancelled }
        let outcome: Outcome = await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                do {
                    return .result(try await handler(envelope.payload))
                } catch {
                    return .failure(error)
                }
            }
            if let cancellation {
                group.addTask {
                    await cancellation.wait()
                    return Task.isCancelled ? nil : .cancelled
                }
            }
            var first: Outcome?
            while first == nil, let next = await group.next() { first = next }
            group.cancelAll()
            return first ?? .cancelled
        }
        switch outcome {
        case .cancelled:
            return fail(RivetRemoteError.Codes.cancelled, "the call was cancelled")
        case .failure(let error):
            return .error(id, await remoteError(for: error))
        case .result(let payload):
            guard payload.count <= configuration.maxResponseBytes else {
                return fail(RivetRemoteError.Codes.responseTooLarge,
                    "the response is \(payload.count) bytes; the limit is \(configuration.maxResponseBytes)")
            }
            return RivetDeviceEnvelope(kind: .result, correlationID: id, name: "", payload: payload)
        }
    }
}

/// One RPC handler ready for ``RivetDeviceRouter/register(_:)``: the route and a closure that
/// decodes the request, runs the typed handler and encodes its answer.
public struct RivetDeviceHandler: Sendable {
    /// The route the handler serves.
    public let route: RivetRoute
    let handler: RivetDeviceRouter.Handler

    /// Wraps a typed handler for `Request.route`.
    public static func rpc<Request: RivetDeviceRequest>(
        _ type: Request.Type = Request.self,
        handler: @escaping @Sendable (Request) async throws -> Request.Response
    ) -> RivetDeviceHandler {
        let route = Request.route
        return RivetDeviceHandler(route: route) { payload in
            let request = try RequestDecodingFailure.decode(Request.self, from: payload, as: "the arguments of \(route.name)")
            let response = try await handler(request)
            return try RivetDeviceJSON.encode(response, describing: "the response of \(route)")
        }
    }
}

/// A name safe to echo in a message: names that break the RVT1 rules are not echoed.
func printable(_ name: String) -> String {
    (try? RVT1.validateName(name)) != nil ? name : "(invalid name)"
}
