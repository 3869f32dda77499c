/// A type in a schema: a primitive, a list, an optional, or a declared record or enum.
public indirect enum SchemaType: Hashable, Sendable, CustomStringConvertible {
    /// UTF-8 text (JSON string).
    case string
    /// `true` / `false`.
    case bool
    /// Signed 8-bit integer.
    case int8
    /// Signed 16-bit integer.
    case int16
    /// Signed 32-bit integer.
    case int32
    /// Signed 64-bit integer (exact in JSON, see `docs/schema.md`).
    case int64
    /// Unsigned 8-bit integer.
    case uint8
    /// Unsigned 16-bit integer.
    case uint16
    /// Unsigned 32-bit integer.
    case uint32
    /// Unsigned 64-bit integer (exact in JSON).
    case uint64
    /// IEEE 754 double; must be finite to be sent.
    case double
    /// Raw bytes (JSON base64 string).
    case bytes
    /// `(list T)`: a JSON array.
    case list(SchemaType)
    /// `(optional T)`: the value or JSON null / an absent member.
    case optional(SchemaType)
    /// A record or enum declared in the schema, by name.
    case named(String)

    /// The primitives by their schema spelling.
    public static let primitives: [String: SchemaType] = [
        "string": .string, "bool": .bool, "int8": .int8, "int16": .int16, "int32": .int32,
        "int64": .int64, "uint8": .uint8, "uint16": .uint16, "uint32": .uint32,
        "uint64": .uint64, "double": .double, "bytes": .bytes,
    ]

    /// The schema spelling, e.g. `(list (optional score))`.
    public var description: String {
        switch self {
        case .list(let element): return "(list \(element))"
        case .optional(let wrapped): return "(optional \(wrapped))"
        case .named(let name): return name
        default: return Self.primitives.first { $0.value == self }!.key
        }
    }

    /// The declared names this type mentions directly or inside lists and optionals.
    var referencedNames: [String] {
        switch self {
        case .list(let inner), .optional(let inner): return inner.referencedNames
        case .named(let name): return [name]
        default: return []
        }
    }
}

/// A named, typed slot: a record field or an RPC argument.
public struct SchemaField: Hashable, Sendable {
    /// The field's schema name (`game-id`), also its JSON key.
    public var name: String
    /// The field's type.
    public var type: SchemaType
    /// Where the field is declared.
    public var location: SourceLocation
}

/// `(record NAME [DOC] (FIELD TYPE) ...)`.
public struct SchemaRecord: Hashable, Sendable {
    /// The record's schema name.
    public var name: String
    /// The optional documentation string.
    public var documentation: String?
    /// The fields in declaration order.
    public var fields: [SchemaField]
    /// Where the record is declared.
    public var location: SourceLocation
}

/// `(enum NAME [DOC] CASE ...)`: a closed set of symbols, carried as JSON strings.
public struct SchemaEnum: Hashable, Sendable {
    /// The enum's schema name.
    public var name: String
    /// The optional documentation string.
    public var documentation: String?
    /// The case names in declaration order; each is also its JSON string.
    public var cases: [String]
    /// Where the enum is declared.
    public var location: SourceLocation
}

/// `(rpc NAME [DOC] ((ARG TYPE) ...) RESULT)`; RESULT may be `void`.
public struct SchemaRPC: Hashable, Sendable {
    /// The RPC's schema name, also its route on the wire.
    public var name: String
    /// The optional documentation string.
    public var documentation: String?
    /// The arguments in declaration order (the JSON argument object's members).
    public var arguments: [SchemaField]
    /// The result type; `nil` for `void`.
    public var result: SchemaType?
    /// Where the RPC is declared.
    public var location: SourceLocation
}

/// `(event NAME [DOC] PAYLOAD)`; PAYLOAD may be `void`.
public struct SchemaEvent: Hashable, Sendable {
    /// The event's schema name, also its wire name.
    public var name: String
    /// The optional documentation string.
    public var documentation: String?
    /// The payload type; `nil` for `void`.
    public var payload: SchemaType?
    /// Where the event is declared.
    public var location: SourceLocation
}

/// `(state NAME [DOC] TYPE)`: a typed state key the gateway's scopes can name.
public struct SchemaStateKey: Hashable, Sendable {
    /// The key's schema name, also its wire name.
    public var name: String
    /// The optional documentation string.
    public var documentation: String?
    /// The value type.
    public var type: SchemaType
    /// Where the key is declared.
    public var location: SourceLocation
}

/// A name in an allowlist form, with its location for diagnostics.
public struct SchemaNameReference: Hashable, Sendable {
    /// The referenced name.
    public var name: String
    /// Where the name appears.
    public var location: SourceLocation
}

/// `(scope NAME [DOC] (rpcs NAME ...) (events NAME ...) (state-read NAME ...) (state-write NAME ...))`:
/// a named permission the desktop grants to a paired device. Each clause is optional and names
/// only items of the matching `device-*` allowlist; the gateway's policy reads scopes, the
/// generated Swift and the lock do not (scopes are policy, not wire contract).
public struct SchemaScope: Hashable, Sendable {
    /// The scope's name: 1–64 characters of `a-z 0-9 - _ .`, the charset of a pairing scope.
    public var name: String
    /// The optional documentation string.
    public var documentation: String?
    /// `(rpcs ...)`: RPCs the scope lets a device call, each in `device-rpcs`.
    public var rpcs: [SchemaNameReference]
    /// `(events ...)`: events the scope delivers to a device, each in `device-events`.
    public var events: [SchemaNameReference]
    /// `(state-read ...)`: state keys a device may read and whose changes it receives, each in
    /// `device-state`.
    public var stateRead: [SchemaNameReference]
    /// `(state-write ...)`: state keys a device may write, each in `device-state`.
    public var stateWrite: [SchemaNameReference]
    /// Where the scope is declared.
    public var location: SourceLocation
}

/// The access level of generated declarations.
public enum SchemaAccess: String, Hashable, Sendable {
    /// `internal` (the default): for a schema used inside one module.
    case `internal`
    /// `public`: for a library module other targets import.
    case `public`
}

/// A validated `rivet.rktd`: every name is declared once, every type resolves, and every
/// allowlisted name exists. Build one with ``Schema/parse(_:file:)``.
public struct Schema: Hashable, Sendable {
    /// The file the schema was read from, as named by the user.
    public var file: String
    /// Records in declaration order.
    public var records: [SchemaRecord]
    /// Enums in declaration order.
    public var enums: [SchemaEnum]
    /// RPCs in declaration order (exported or not).
    public var rpcs: [SchemaRPC]
    /// Events in declaration order.
    public var events: [SchemaEvent]
    /// State keys in declaration order.
    public var stateKeys: [SchemaStateKey]
    /// `(device-rpcs ...)`: the RPCs exported to devices, in allowlist order. Empty by default.
    public var deviceRPCs: [SchemaNameReference]
    /// `(device-events ...)`: the events exported to devices. Empty by default.
    public var deviceEvents: [SchemaNameReference]
    /// `(device-state ...)`: the state keys exported to devices. Empty by default.
    public var deviceState: [SchemaNameReference]
    /// `(swift-access public|internal)`; `internal` by default.
    public var access: SchemaAccess
    /// `(scope ...)` declarations in declaration order; none by default (then no device is
    /// granted anything).
    public var scopes: [SchemaScope]

    /// The scope named `name`, if declared.
    public func scope(named name: String) -> SchemaScope? { scopes.first { $0.name == name } }

    /// The exported RPCs, in allowlist order.
    public var exportedRPCs: [SchemaRPC] {
        deviceRPCs.compactMap { reference in rpcs.first { $0.name == reference.name } }
    }

    /// The exported events, in allowlist order.
    public var exportedEvents: [SchemaEvent] {
        deviceEvents.compactMap { reference in events.first { $0.name == reference.name } }
    }

    /// The exported state keys, in allowlist order.
    public var exportedStateKeys: [SchemaStateKey] {
        deviceState.compactMap { reference in stateKeys.first { $0.name == reference.name } }
    }

    /// The record with `name`, if declared.
    public func record(named name: String) -> SchemaRecord? { records.first { $0.name == name } }

    /// The enum with `name`, if declared.
    public func enumeration(named name: String) -> SchemaEnum? { enums.first { $0.name == name } }

    /// Names of the records and enums reachable from the exported RPCs, events and state keys
    /// (through arguments, results, payloads, values and record fields): exactly the types that
    /// gain a JSON wire contract.
    public var wireTypeNames: Set<String> {
        var roots: [SchemaType] = []
        for rpc in exportedRPCs {
            roots += rpc.arguments.map(\.type)
            if let result = rpc.result { roots.append(result) }
        }
        for event in exportedEvents { if let payload = event.payload { roots.append(payload) } }
        roots += exportedStateKeys.map(\.type)
        var reached = Set<String>()
        var queue = roots.flatMap(\.referencedNames)
        while let name = queue.popLast() {
            guard reached.insert(name).inserted else { continue }
            if let record = record(named: name) {
                queue += record.fields.flatMap(\.type.referencedNames)
            }
        }
        return reached
    }
}
