/// The exported device surface of a schema in canonical form, and its comparison with a
/// committed lock of an earlier surface.
///
/// Each exported RPC, event and state key is written with its full wire shape (records and
/// enums expanded; a record nested inside itself appears as `(ref NAME)`), so any change a
/// device could observe changes the entry. Removing or changing an entry is a break; adding
/// one is compatible.
public struct SchemaLock: Hashable, Sendable {
    /// One exported item: `kind` is `rpc`, `event` or `state`.
    public struct Entry: Hashable, Sendable {
        /// `rpc`, `event` or `state`.
        public var kind: String
        /// The item's schema name.
        public var name: String
        /// The canonical text of the whole entry, e.g. `(rpc refresh-score (args) (result void))`.
        public var signature: String
        /// Where the entry is (in the schema or the lock file).
        public var location: SourceLocation
    }

    /// The format version written in `(rivet-lock 1)`.
    public static let formatVersion: Int64 = 1

    /// The entries in order: RPCs, events, state keys, each in allowlist order.
    public var entries: [Entry]

    /// The surface `schema` exports.
    public init(schema: Schema) {
        var entries: [Entry] = []
        for rpc in schema.exportedRPCs {
            let arguments = list([symbol("args")] + rpc.arguments.map { list([symbol($0.name), Self.canonical($0.type, schema, [])]) })
            let result = list([symbol("result"), rpc.result.map { Self.canonical($0, schema, []) } ?? symbol("void")])
            entries.append(Entry(kind: "rpc", name: rpc.name, signature: list([symbol("rpc"), symbol(rpc.name), arguments, result]).description, location: rpc.location))
        }
        for event in schema.exportedEvents {
            let payload = list([symbol("payload"), event.payload.map { Self.canonical($0, schema, []) } ?? symbol("void")])
            entries.append(Entry(kind: "event", name: event.name, signature: list([symbol("event"), symbol(event.name), payload]).description, location: event.location))
        }
        for key in schema.exportedStateKeys {
            let value = list([symbol("value"), Self.canonical(key.type, schema, [])])
            entries.append(Entry(kind: "state", name: key.name, signature: list([symbol("state"), symbol(key.name), value]).description, location: key.location))
        }
        self.entries = entries
    }

    /// Reads a lock file written by ``text``.
    /// - Parameter file: the path printed in diagnostics.
    /// - Throws: ``SchemaDiagnostics`` when the text is not a valid lock.
    public init(parsing text: String, file: String) throws(SchemaDiagnostics) {
        let data = try SExprParser.parse(text, file: file)
        var diagnostics: [SchemaDiagnostic] = []
        func fail(_ message: String, _ location: SourceLocation) {
            diagnostics.append(SchemaDiagnostic(file: file, location: location, message: message))
        }
        guard let header = data.first else {
            throw SchemaDiagnostics([SchemaDiagnostic(file: file, location: SourceLocation(line: 1, column: 1), message: "lock file is empty; expected (rivet-lock 1)")])
        }
        if header.properList?.first?.symbol != "rivet-lock" {
            fail("lock file must start with (rivet-lock 1), found `\(header)`", header.location)
        } else if header.properList?.count != 2 || header.properList?[1].kind != .integer(Self.formatVersion) {
            fail("lock file format `\(header)` is not supported; this generator reads (rivet-lock 1)", header.location)
        }
        var entries: [Entry] = []
        var seen = Set<String>()
        for datum in data.dropFirst() {
            guard let parts = datum.properList, parts.count >= 2, let kind = parts[0].symbol,
                ["rpc", "event", "state"].contains(kind), let name = parts[1].symbol
            else {
                fail("lock entry must be (rpc NAME …), (event NAME …) or (state NAME …), found `\(datum)`", datum.location)
                continue
            }
            guard seen.insert("\(kind) \(name)").inserted else {
                fail("\(kind) `\(name)` appears twice in the lock", datum.location)
                continue
            }
            entries.append(Entry(kind: kind, name: name, signature: datum.description, location: datum.location))
        }
        if !diagnostics.isEmpty { throw SchemaDiagnostics(diagnostics) }
        self.entries = entries
    }

    /// The lock file text: a comment, `(rivet-lock 1)` and one entry per line.
    public var text: String {
        var out = ";; The device surface exported by the schema. Written by rivet-generate --write-lock;\n"
        out += ";; rivet-generate --check-lock reports removed or changed entries as breaks.\n"
        out += "(rivet-lock \(Self.formatVersion))\n"
        for entry in entries { out += entry.signature + "\n" }
        return out
    }

    /// The result of comparing a schema's surface with a lock.
    public struct Comparison: Hashable, Sendable {
        /// One diagnostic per removed or changed entry: removals point into the lock file,
        /// changes into the schema.
        public var breaks: [SchemaDiagnostic]
        /// Entries the schema exports that the lock does not list, as `kind name`.
        public var additions: [String]
        /// Whether the schema is compatible with the lock.
        public var isCompatible: Bool { breaks.isEmpty }
    }

    /// Compares this surface (the schema's) with `lock` (read from `lockFile`).
    public func compare(withLock lock: SchemaLock, schemaFile: String, lockFile: String) -> Comparison {
        let current = Dictionary(entries.map { ("\($0.kind) \($0.name)", $0) }, uniquingKeysWith: { first, _ in first })
        var breaks: [SchemaDiagnostic] = []
        for old in lock.entries {
            guard let now = current["\(old.kind) \(old.name)"] else {
                breaks.append(SchemaDiagnostic(
                    file: lockFile, location: old.location,
                    message: "\(old.kind) `\(old.name)` is in the lock but no longer exported; removing it breaks devices built against the lock"))
                continue
            }
            if now.signature != old.signature {
                breaks.append(SchemaDiagnostic(
                    file: schemaFile, location: now.location,
                    message: "\(old.kind) `\(old.name)` changed its wire signature since the lock, which breaks devices built against it: was \(old.signature), now \(now.signature)"))
            }
        }
        let locked = Set(lock.entries.map { "\($0.kind) \($0.name)" })
        let additions = entries.map { "\($0.kind) \($0.name)" }.filter { !locked.contains($0) }
        return Comparison(breaks: breaks, additions: additions)
    }

    private static func canonical(_ type: SchemaType, _ schema: Schema, _ enclosing: [String]) -> SExpr {
        switch type {
        case .list(let element): return list([symbol("list"), canonical(element, schema, enclosing)])
        case .optional(let wrapped): return list([symbol("optional"), canonical(wrapped, schema, enclosing)])
        case .named(let name):
            if let record = schema.record(named: name) {
                if enclosing.contains(name) { return list([symbol("ref"), symbol(name)]) }
                return list([symbol("record"), symbol(name)] + record.fields.map {
                    list([symbol($0.name), canonical($0.type, schema, enclosing + [name])])
                })
            }
            if let enumeration = schema.enumeration(named: name) {
                return list([symbol("enum"), symbol(name)] + enumeration.cases.map(symbol))
            }
            return symbol(name)
        default:
            return symbol(type.description)
        }
    }
}

private let origin = SourceLocation(line: 1, column: 1)
private func symbol(_ name: String) -> SExpr { SExpr(.symbol(name), at: origin) }
private func list(_ elements: [SExpr]) -> SExpr { SExpr(.list(elements, tail: nil), at: origin) }
