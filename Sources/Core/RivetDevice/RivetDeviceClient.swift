import RivetWire

/// Sends typed requests over a transport and matches each answer to its call by correlation ID.
///
/// Every call has a timeout (``RivetDeviceConfiguration/defaultTimeout`` unless given); a
/// timeout or a cancelled task sends a cancel frame. An answer with a correlation ID no call
/// is waiting for, or with another protocol version, is a protocol violation: the client tells
/// the peer, closes the transport and fails every outstanding call. When given a router, the
/// client also serves the peer's calls on the same transport.
public final class RivetDeviceClient: Sendable {
    private let connection: RivetDeviceConnection
    private let reader: Task<Void, Never>

    /// Events and state changes the peer pushes, in arrival order; finishes when the connection
    /// ends. One consumer at a time. If it falls more than
    /// ``RivetDeviceConfiguration/maxBufferedEvents`` behind, the oldest are dropped.
    public let events: AsyncStream<RivetDeviceEvent>

    /// The bounds this client enforces.
    public var configuration: RivetDeviceConfiguration { connection.configuration }

    /// Starts reading `transport`. The client owns the transport from now on and closes it in
    /// ``close()`` (or when it is deinitialised).
    public init(
        transport: any RivetDeviceTransport, configuration: RivetDeviceConfiguration = .default,
        router: RivetDeviceRouter? = nil
    ) {
        let (events, continuation) = AsyncStream.makeStream(
            of: RivetDeviceEvent.self, bufferingPolicy: .bufferingNewest(configuration.maxBufferedEvents))
        let connection = RivetDeviceConnection(
            transport: transport, configuration: configuration, router: router, events: continuation)
        self.events = events
        self.connection = connection
        self.reader = Task { _ = await connection.run() }
    }

    deinit { reader.cancel() }

    /// Calls the peer with `request` and returns its decoded answer.
    /// - Parameter timeout: how long to wait for the answer, counted from the call (it covers
    ///   writing the request too, though a write already blocked by a peer that stopped
    ///   reading finishes before the timeout is reported); the configured default when `nil`.
    /// - Throws: ``RivetRemoteError`` when the peer answers with an error;
    ///   ``RivetDeviceError/timeout`` (a cancel frame was sent); `CancellationError` when the
    ///   task is cancelled (a cancel frame was sent); ``RivetDeviceError/requestTooLarge`` or
    ///   ``RivetDeviceError/tooManyPendingCalls`` (nothing was sent);
    ///   ``RivetDeviceError/responseTooLarge``; ``RivetDeviceError/decodingFailed``;
    ///   ``RivetDeviceError/invalidRoute``; ``RivetDeviceError/encodingFailed``; or the
    ///   connection's failure (``RivetDeviceError/connectionClosed``,
    ///   ``RivetDeviceError/protocolViolation``, ``RivetDeviceError/transportFailed``).
    public func send<Request: RivetDeviceRequest>(
        _ request: Request, timeout: Duration? = nil
    ) async throws -> Request.Response {
        let route = Request.route
        try route.validate()
        let payload = try RivetDeviceJSON.encode(request, describing: "the request for \(route)")
        let answer = try await connection.call(
            kind: .call, route: route.name, payload: payload, timeout: timeout ?? configuration.defaultTimeout)
        return try RivetDeviceJSON.decode(Request.Response.self, from: answer, describing: "the response of \(route)")
    }

    /// Reads state `key` from the peer.
    /// - Throws: as ``send(_:timeout:)``.
    public func read<Value>(_ key: RivetStateKey<Value>, timeout: Duration? = nil) async throws -> Value {
        try key.route.validate()
        let answer = try await connection.call(
            kind: .stateRead, route: key.route.name, payload: [], timeout: timeout ?? configuration.defaultTimeout)
        return try RivetDeviceJSON.decode(Value.self, from: answer, describing: "state \(key.route)")
    }

    /// Writes `value` to state `key` on the peer.
    /// - Throws: as ``send(_:timeout:)``.
    public func write<Value>(_ key: RivetStateKey<Value>, _ value: Value, timeout: Duration? = nil) async throws {
        try key.route.validate()
        let payload = try RivetDeviceJSON.encode(value, describing: "state \(key.route)")
        _ = try await connection.call(
            kind: .stateWrite, route: key.route.name, payload: payload, timeout: timeout ?? configuration.defaultTimeout)
    }

    /// Calls this client has sent (or reserved) and whose answer has not arrived, including
    /// cancelled calls; bounded by ``RivetDeviceConfiguration/maxPendingCalls``.
    public var pendingCallCount: Int { connection.pendingCallCount }

    /// Fails outstanding calls with ``RivetDeviceError/connectionClosed``, cancels calls being
    /// served for the peer, closes the transport and waits for the reader to stop.
    public func close() async {
        await connection.close()
        await reader.value
    }
}
