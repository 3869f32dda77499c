import RivetIdentity
import RivetSchema

/// What a session may do, by schema name: RPCs it may call, events it receives, state keys it
/// may read (and whose changes it receives) and state keys it may write. The four sets are
/// independent: reading a key does not allow writing it, nor the reverse.
public struct RivetDeviceGrants: Hashable, Sendable {
    /// RPCs the session may call.
    public var rpcs: Set<String>
    /// Events delivered to the session.
    public var events: Set<String>
    /// State keys the session may read; their state changes are delivered to it.
    public var stateRead: Set<String>
    /// State keys the session may write.
    public var stateWrite: Set<String>

    /// Creates grants; every set is empty by default.
    public init(rpcs: Set<String> = [], events: Set<String> = [], stateRead: Set<String> = [], stateWrite: Set<String> = []) {
        self.rpcs = rpcs
        self.events = events
        self.stateRead = stateRead
        self.stateWrite = stateWrite
    }

    /// Grants nothing.
    public static let none = RivetDeviceGrants()

    /// Whether nothing at all is granted.
    public var isEmpty: Bool { rpcs.isEmpty && events.isEmpty && stateRead.isEmpty && stateWrite.isEmpty }

    /// Everything either grants allows.
    public func union(_ other: RivetDeviceGrants) -> RivetDeviceGrants {
        RivetDeviceGrants(
            rpcs: rpcs.union(other.rpcs), events: events.union(other.events),
            stateRead: stateRead.union(other.stateRead), stateWrite: stateWrite.union(other.stateWrite))
    }

    /// Only what both grants allow.
    public func intersection(_ other: RivetDeviceGrants) -> RivetDeviceGrants {
        RivetDeviceGrants(
            rpcs: rpcs.intersection(other.rpcs), events: events.intersection(other.events),
            stateRead: stateRead.intersection(other.stateRead), stateWrite: stateWrite.intersection(other.stateWrite))
    }
}

/// The gateway's policy, read from a validated schema: which scopes exist and what each grants.
///
/// A grant never reaches beyond the schema's `device-rpcs`, `device-events` and `device-state`
/// allowlists (``exported``): the schema validator rejects scopes that name anything else, and
/// the policy intersects every scope with the allowlists again, so a hand-built `Schema` cannot
/// widen the surface either.
public struct RivetDeviceGatewayPolicy: Hashable, Sendable {
    /// Everything the schema exports: the `device-*` allowlists, with `device-state` as both the
    /// readable and the writable keys. No grant exceeds it.
    public let exported: RivetDeviceGrants

    private let scopeGrants: [String: RivetDeviceGrants]

    /// Reads the scopes of `schema` (see `docs/schema.md`, "Scopes").
    public init(schema: Schema) {
        let state = Set(schema.deviceState.map(\.name))
        let exported = RivetDeviceGrants(
            rpcs: Set(schema.deviceRPCs.map(\.name)), events: Set(schema.deviceEvents.map(\.name)),
            stateRead: state, stateWrite: state)
        self.exported = exported
        scopeGrants = Dictionary(
            schema.scopes.map { scope in
                let grants = RivetDeviceGrants(
                    rpcs: Set(scope.rpcs.map(\.name)), events: Set(scope.events.map(\.name)),
                    stateRead: Set(scope.stateRead.map(\.name)), stateWrite: Set(scope.stateWrite.map(\.name)))
                return (scope.name, grants.intersection(exported))
            },
            uniquingKeysWith: { $0.union($1) })
    }

    /// The scopes the schema declares, sorted by name.
    public var declaredScopes: [RivetDeviceScope] {
        scopeGrants.keys.compactMap { try? RivetDeviceScope($0) }.sorted()
    }

    /// What `scope` grants, or `nil` when the schema does not declare it.
    public func grants(of scope: RivetDeviceScope) -> RivetDeviceGrants? { scopeGrants[scope.name] }

    /// What a session holding `scopes` may do: the union of each declared scope's grants. An
    /// empty set grants nothing, and so does a scope the schema does not declare (for instance
    /// one removed from the schema after the device was paired).
    public func grants(for scopes: Set<RivetDeviceScope>) -> RivetDeviceGrants {
        scopes.reduce(RivetDeviceGrants.none) { $0.union(scopeGrants[$1.name] ?? .none) }
    }

    /// Checks that every scope in `scopes` is declared, before the daemon grants them at
    /// pairing confirmation.
    /// - Throws: ``RivetDeviceGatewayError/unknownScope`` naming every undeclared scope.
    public func validateGrant(_ scopes: Set<RivetDeviceScope>) throws(RivetDeviceGatewayError) {
        let unknown = scopes.filter { scopeGrants[$0.name] == nil }.map(\.name).sorted()
        if !unknown.isEmpty { throw .unknownScopes(unknown) }
    }
}
