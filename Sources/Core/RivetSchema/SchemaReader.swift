extension Schema {
    /// Longest schema name accepted.
    public static let maxNameLength = 64

    /// Parses and validates `rivet.rktd` text (grammar: `docs/schema.md`).
    /// - Parameter file: the path printed in diagnostics.
    /// - Throws: ``SchemaDiagnostics`` listing every error found, each as
    ///   `path:line:col: error: message`.
    public static func parse(_ text: String, file: String) throws(SchemaDiagnostics) -> Schema {
        let data = try SExprParser.parse(text, file: file)
        var reader = SchemaReader(file: file)
        let schema = reader.read(data)
        if !reader.diagnostics.isEmpty { throw SchemaDiagnostics(reader.diagnostics) }
        return schema
    }

    /// Longest scope name accepted: 64, the bound of a pairing scope (`RivetDeviceScope`).
    public static let maxScopeNameLength = 64

    /// Whether `name` is a valid scope name: 1 to ``maxScopeNameLength`` characters of `a-z`,
    /// `0-9`, `-`, `_` and `.` — exactly the names `RivetDeviceScope` (RivetPairing) accepts, so
    /// every declared scope can be granted at pairing.
    public static func isValidScopeName(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        return !utf8.isEmpty && utf8.count <= maxScopeNameLength && utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }

    /// Whether `name` is a valid schema name: lowercase words of `a-z0-9` joined by single
    /// hyphens, starting with a letter, at most ``maxNameLength`` characters.
    public static func isValidName(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard let first = scalars.first, ("a"..."z").contains(first), scalars.count <= maxNameLength,
            scalars.last != "-"
        else { return false }
        var previousHyphen = false
        for scalar in scalars {
            if scalar == "-" {
                if previousHyphen { return false }
                previousHyphen = true
            } else if ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) {
                previousHyphen = false
            } else {
                return false
            }
        }
        return true
    }
}

/// Names generated code already uses on `RivetDeviceClient`; an exported RPC may not take them.
let clientMemberNames: Set<String> = ["send", "read", "write", "close", "events", "configuration", "pending-call-count"]

/// Names that cannot become Swift members even with backticks.
let unusableMemberNames: Set<String> = ["self", "super", "init", "deinit", "subscript"]

/// Type names that would shadow what generated code refers to.
let reservedTypeNames: Set<String> = ["swift", "foundation", "list", "optional", "void", "any"]

private struct SchemaReader {
    let file: String
    var diagnostics: [SchemaDiagnostic] = []

    private var records: [SchemaRecord] = []
    private var enums: [SchemaEnum] = []
    private var rpcs: [SchemaRPC] = []
    private var events: [SchemaEvent] = []
    private var stateKeys: [SchemaStateKey] = []
    private var allowlists: [String: (location: SourceLocation, names: [SchemaNameReference])] = [:]
    private var access: (value: SchemaAccess, location: SourceLocation)?
    private var scopes: [SchemaScope] = []

    init(file: String) { self.file = file }

    mutating func error(_ message: String, at location: SourceLocation) {
        diagnostics.append(SchemaDiagnostic(file: file, location: location, message: message))
    }

    mutating func read(_ data: [SExpr]) -> Schema {
        for datum in data { readForm(datum) }
        validate()
        return Schema(
            file: file, records: records, enums: enums, rpcs: rpcs, events: events, stateKeys: stateKeys,
            deviceRPCs: allowlists["device-rpcs"]?.names ?? [],
            deviceEvents: allowlists["device-events"]?.names ?? [],
            deviceState: allowlists["device-state"]?.names ?? [],
            access: access?.value ?? .internal, scopes: scopes)
    }

    // MARK: Forms

    private static let formNames = "record, enum, rpc, event, state, device-rpcs, device-events, device-state, scope or swift-access"

    mutating func readForm(_ datum: SExpr) {
        guard case .list(let elements, let tail) = datum.kind, let head = elements.first else {
            error("expected a form such as (record …) or (rpc …), found `\(datum)`", at: datum.location)
            return
        }
        guard let keyword = head.symbol else {
            error("a form starts with its kind (\(Self.formNames)), found `\(head)`", at: head.location)
            return
        }
        if keyword == "swift-access" {
            readAccess(datum, elements: elements, tail: tail)
            return
        }
        guard tail == nil else {
            error("`\(keyword)` form must be a proper list (no `.` tail)", at: datum.location)
            return
        }
        let rest = Array(elements.dropFirst())
        switch keyword {
        case "record": readRecord(datum, rest)
        case "enum": readEnum(datum, rest)
        case "rpc": readRPC(datum, rest)
        case "event": readEvent(datum, rest)
        case "state": readState(datum, rest)
        case "device-rpcs", "device-events", "device-state": readAllowlist(keyword, datum, rest)
        case "scope": readScope(datum, rest)
        default:
            error("unknown form `\(keyword)`; expected \(Self.formNames)", at: head.location)
        }
    }

    /// Reads `NAME [DOC]` at the start of a declaration; returns the name, doc and the rest.
    mutating func readHeader(_ kind: String, _ form: SExpr, _ rest: [SExpr]) -> (String, String?, [SExpr])? {
        guard let nameDatum = rest.first else {
            error("`\(kind)` needs a name: (\(kind) NAME …)", at: form.location)
            return nil
        }
        guard let name = checkedName(nameDatum, what: "\(kind) name") else { return nil }
        var remaining = Array(rest.dropFirst())
        var documentation: String?
        if let first = remaining.first, case .string(let text) = first.kind {
            documentation = text
            remaining.removeFirst()
        }
        return (name, documentation, remaining)
    }

    mutating func checkedName(_ datum: SExpr, what: String) -> String? {
        guard let name = datum.symbol else {
            error("\(what) must be a symbol, found `\(datum)`", at: datum.location)
            return nil
        }
        guard Schema.isValidName(name) else {
            error("`\(name)` is not a valid \(what): use lowercase words of a-z and 0-9 joined by single hyphens, starting with a letter, at most \(Schema.maxNameLength) characters (e.g. `current-score`)", at: datum.location)
            return nil
        }
        return name
    }

    mutating func readRecord(_ form: SExpr, _ rest: [SExpr]) {
        guard let (name, documentation, fieldData) = readHeader("record", form, rest) else { return }
        var fields: [SchemaField] = []
        for datum in fieldData {
            if let field = readField(datum, owner: "record `\(name)`") { fields.append(field) }
        }
        records.append(SchemaRecord(name: name, documentation: documentation, fields: fields, location: form.location))
    }

    mutating func readField(_ datum: SExpr, owner: String) -> SchemaField? {
        guard let parts = datum.properList, parts.count == 2 else {
            error("a field of \(owner) is written (NAME TYPE), found `\(datum)`", at: datum.location)
            return nil
        }
        guard let name = checkedName(parts[0], what: "field name") else { return nil }
        guard let type = readType(parts[1], voidAllowed: false) else { return nil }
        return SchemaField(name: name, type: type ?? .string, location: datum.location)
    }

    mutating func readEnum(_ form: SExpr, _ rest: [SExpr]) {
        guard let (name, documentation, caseData) = readHeader("enum", form, rest) else { return }
        guard !caseData.isEmpty else {
            error("enum `\(name)` needs at least one case: (enum \(name) CASE …)", at: form.location)
            return
        }
        let cases = distinctNames(
            caseData, what: "enum case",
            twice: { "enum `\(name)` lists case `\($0)` twice (first at \($1))" },
            refusing: { unusableMemberNames.contains($0) ? "`\($0)` cannot be an enum case in Swift; rename it" : nil })
        enums.append(
            SchemaEnum(name: name, documentation: documentation, cases: cases.map(\.name), location: form.location))
    }

    mutating func readRPC(_ form: SExpr, _ rest: [SExpr]) {
        guard let (name, documentation, body) = readHeader("rpc", form, rest) else { return }
        guard body.count == 2, let argumentData = body[0].properList else {
            error("rpc `\(name)` is written (rpc \(name) ((ARG TYPE) …) RESULT); use () for no arguments and void for no result", at: form.location)
            return
        }
        var arguments: [SchemaField] = []
        for datum in argumentData {
            if let argument = readField(datum, owner: "rpc `\(name)`") { arguments.append(argument) }
        }
        guard let result = readType(body[1], voidAllowed: true) else { return }
        rpcs.append(SchemaRPC(name: name, documentation: documentation, arguments: arguments, result: result, location: form.location))
    }

    mutating func readEvent(_ form: SExpr, _ rest: [SExpr]) {
        guard
            let (name, documentation, payload) = readTyped(
                "event", form, rest, voidAllowed: true,
                usage: { "event `\($0)` is written (event \($0) PAYLOAD-TYPE); use void for no payload" })
        else { return }
        events.append(SchemaEvent(name: name, documentation: documentation, payload: payload, location: form.location))
    }

    mutating func readState(_ form: SExpr, _ rest: [SExpr]) {
        guard
            let (name, documentation, type) = readTyped(
                "state", form, rest, voidAllowed: false, usage: { "state `\($0)` is written (state \($0) TYPE)" })
        else { return }
        stateKeys.append(SchemaStateKey(name: name, documentation: documentation, type: type ?? .string, location: form.location))
    }

    /// A `(KIND NAME [DOC] TYPE)` form: its name, documentation and type (nil for `void` where
    /// `voidAllowed`). Nil after an error: `usage` (given the name) says how the form is written
    /// when its body is not one type.
    mutating func readTyped(
        _ kind: String, _ form: SExpr, _ rest: [SExpr], voidAllowed: Bool, usage: (String) -> String
    ) -> (String, String?, SchemaType?)? {
        guard let (name, documentation, body) = readHeader(kind, form, rest) else { return nil }
        guard body.count == 1 else {
            error(usage(name), at: form.location)
            return nil
        }
        guard let type = readType(body[0], voidAllowed: voidAllowed) else { return nil }
        return (name, documentation, type)
    }

    mutating func readAllowlist(_ keyword: String, _ form: SExpr, _ rest: [SExpr]) {
        if let earlier = allowlists[keyword] {
            error("`\(keyword)` appears twice (first at \(earlier.location)); list every name in one form", at: form.location)
            return
        }
        let names = distinctNames(
            rest, what: "name in \(keyword)", twice: { "`\($0)` is listed twice in \(keyword) (first at \($1))" })
        allowlists[keyword] = (form.location, names)
    }

    /// The valid names among `data`, in order, each once: a datum that is not a valid name
    /// (`what` names it in the error), repeats an earlier name (`twice` gets the name and the
    /// first place), or that `refusing` has an error for, is reported and left out.
    mutating func distinctNames(
        _ data: [SExpr], what: String, twice: (String, SourceLocation) -> String,
        refusing: (String) -> String? = { _ in nil }
    ) -> [SchemaNameReference] {
        var names: [SchemaNameReference] = []
        var seen: [String: SourceLocation] = [:]
        for datum in data {
            guard let name = checkedName(datum, what: what) else { continue }
            if let first = seen[name] {
                error(twice(name, first), at: datum.location)
                continue
            }
            if let refusal = refusing(name) {
                error(refusal, at: datum.location)
                continue
            }
            seen[name] = datum.location
            names.append(SchemaNameReference(name: name, location: datum.location))
        }
        return names
    }

    private static let scopeClauses = "(rpcs NAME …), (events NAME …), (state-read NAME …) or (state-write NAME …)"

    mutating func readScope(_ form: SExpr, _ rest: [SExpr]) {
        guard let nameDatum = rest.first else {
            error("`scope` needs a name: (scope NAME [DOC] \(Self.scopeClauses))", at: form.location)
            return
        }
        guard let name = nameDatum.symbol else {
            error("scope name must be a symbol, found `\(nameDatum)`", at: nameDatum.location)
            return
        }
        guard Schema.isValidScopeName(name) else {
            error("`\(name)` is not a valid scope name: use 1 to \(Schema.maxScopeNameLength) characters of a-z, 0-9, `-`, `_` and `.` (e.g. `viewer`)", at: nameDatum.location)
            return
        }
        var clauses = Array(rest.dropFirst())
        var documentation: String?
        if let first = clauses.first, case .string(let text) = first.kind {
            documentation = text
            clauses.removeFirst()
        }
        var lists: [String: (location: SourceLocation, names: [SchemaNameReference])] = [:]
        for clause in clauses {
            guard let parts = clause.properList, let keyword = parts.first?.symbol else {
                error("a clause of scope `\(name)` is written \(Self.scopeClauses), found `\(clause)`", at: clause.location)
                continue
            }
            guard ["rpcs", "events", "state-read", "state-write"].contains(keyword) else {
                error("unknown clause `\(keyword)` in scope `\(name)`; expected \(Self.scopeClauses)", at: parts[0].location)
                continue
            }
            if let earlier = lists[keyword] {
                error("scope `\(name)` has a second `\(keyword)` clause (first at \(earlier.location)); list every name in one clause", at: clause.location)
                continue
            }
            var names: [SchemaNameReference] = []
            var seen: [String: SourceLocation] = [:]
            for datum in parts.dropFirst() {
                guard let listed = checkedName(datum, what: "name in \(keyword) of scope `\(name)`") else { continue }
                if let first = seen[listed] {
                    error("`\(listed)` is listed twice in \(keyword) of scope `\(name)` (first at \(first))", at: datum.location)
                    continue
                }
                seen[listed] = datum.location
                names.append(SchemaNameReference(name: listed, location: datum.location))
            }
            lists[keyword] = (clause.location, names)
        }
        scopes.append(SchemaScope(
            name: name, documentation: documentation, rpcs: lists["rpcs"]?.names ?? [],
            events: lists["events"]?.names ?? [], stateRead: lists["state-read"]?.names ?? [],
            stateWrite: lists["state-write"]?.names ?? [], location: form.location))
    }

    mutating func readAccess(_ form: SExpr, elements: [SExpr], tail: SExpr?) {
        let values = Array(elements.dropFirst()) + (tail.map { [$0] } ?? [])
        if let earlier = access {
            error("`swift-access` appears twice (first at \(earlier.location))", at: form.location)
            return
        }
        guard values.count == 1, let symbol = values[0].symbol, let value = SchemaAccess(rawValue: symbol) else {
            error("`swift-access` is written (swift-access public) or (swift-access internal)", at: form.location)
            return
        }
        access = (value, form.location)
    }

    /// Reads a type. Returns `nil` after reporting an error, `.some(nil)` for an allowed `void`.
    mutating func readType(_ datum: SExpr, voidAllowed: Bool) -> SchemaType?? {
        switch datum.kind {
        case .symbol(let name):
            if name == "void" {
                if voidAllowed { return .some(nil) }
                error("`void` is only allowed as an RPC result or an event payload", at: datum.location)
                return nil
            }
            if name.lowercased() == "any" {
                error("type `\(name)` is not supported: every device payload needs a declared shape; use a record, an enum or a primitive", at: datum.location)
                return nil
            }
            if let primitive = SchemaType.primitives[name] { return .some(primitive) }
            if name == "list" || name == "optional" {
                error("`\(name)` takes a type: write (\(name) TYPE)", at: datum.location)
                return nil
            }
            guard Schema.isValidName(name) else {
                error("`\(name)` is not a type: expected a primitive (string, bool, int8…int64, uint8…uint64, double, bytes), (list T), (optional T) or a record or enum name", at: datum.location)
                return nil
            }
            return .some(.named(name))
        case .list(let parts, nil):
            guard let head = parts.first?.symbol, head == "list" || head == "optional" else {
                error("`\(datum)` is not a type: compound types are (list T) and (optional T)", at: datum.location)
                return nil
            }
            guard parts.count == 2 else {
                error("`\(head)` takes exactly one type: (\(head) TYPE)", at: datum.location)
                return nil
            }
            guard let inner = readType(parts[1], voidAllowed: false) else { return nil }
            let element = inner ?? .string
            if head == "list" { return .some(.list(element)) }
            if case .optional = element {
                error("(optional (optional …)) cannot be told apart from (optional …) in JSON; use one optional", at: datum.location)
                return nil
            }
            return .some(.optional(element))
        default:
            error("`\(datum)` is not a type", at: datum.location)
            return nil
        }
    }

    // MARK: Validation

    mutating func validate() {
        var typeNames: [String: SourceLocation] = [:]
        let declarations: [(String, String, SourceLocation)] =
            records.map { ("record", $0.name, $0.location) } + enums.map { ("enum", $0.name, $0.location) }
        for (kind, name, location) in declarations.sorted(by: { $0.2 < $1.2 }) {
            if let first = typeNames[name] {
                error("\(kind) `\(name)` is already declared at \(first)", at: location)
                continue
            }
            typeNames[name] = location
            if SchemaType.primitives[name] != nil || reservedTypeNames.contains(name) {
                error("\(kind) name `\(name)` is reserved; choose another name", at: location)
            } else if name.hasPrefix("rivet") {
                error("\(kind) name `\(name)` starts with `rivet`, which generated code reserves; choose another name", at: location)
            }
        }
        checkUnique(rpcs.map { ($0.name, $0.location) }, kind: "rpc")
        checkUnique(events.map { ($0.name, $0.location) }, kind: "event")
        checkUnique(stateKeys.map { ($0.name, $0.location) }, kind: "state key")

        for record in records {
            checkUnique(record.fields.map { ($0.name, $0.location) }, kind: "field of record `\(record.name)`")
            for field in record.fields {
                checkMemberName(field.name, at: field.location)
                checkType(field.type, at: field.location)
            }
        }
        for rpc in rpcs {
            checkUnique(rpc.arguments.map { ($0.name, $0.location) }, kind: "argument of rpc `\(rpc.name)`")
            for argument in rpc.arguments {
                checkMemberName(argument.name, at: argument.location)
                checkType(argument.type, at: argument.location)
            }
            if let result = rpc.result { checkType(result, at: rpc.location) }
        }
        for event in events { if let payload = event.payload { checkType(payload, at: event.location) } }
        for key in stateKeys { checkType(key.type, at: key.location) }
        checkRecordCycles()

        checkAllowlist("device-rpcs", declared: Set(rpcs.map(\.name)), kind: "rpc")
        checkAllowlist("device-events", declared: Set(events.map(\.name)), kind: "event")
        checkAllowlist("device-state", declared: Set(stateKeys.map(\.name)), kind: "state key")
        checkScopes()

        let generatedTypes = Set(records.map { SwiftNames.typeName($0.name) } + enums.map { SwiftNames.typeName($0.name) })
        for reference in allowlists["device-rpcs"]?.names ?? [] {
            guard let rpc = rpcs.first(where: { $0.name == reference.name }) else { continue }
            let requestType = SwiftNames.requestTypeName(rpc.name)
            if generatedTypes.contains(requestType) {
                error("rpc `\(rpc.name)` generates type \(requestType), which a record or enum already uses; rename one", at: rpc.location)
            }
            if clientMemberNames.contains(rpc.name) {
                error("rpc `\(rpc.name)` would collide with RivetDeviceClient.\(SwiftNames.memberName(rpc.name)); rename it", at: rpc.location)
            }
            if unusableMemberNames.contains(rpc.name) {
                error("`\(rpc.name)` cannot be a method name in Swift; rename the rpc", at: rpc.location)
            }
            for argument in rpc.arguments where argument.name == "timeout" {
                error("argument `timeout` of rpc `\(rpc.name)` collides with the generated method's timeout parameter; rename it", at: argument.location)
            }
        }
    }

    mutating func checkUnique(_ names: [(String, SourceLocation)], kind: String) {
        var seen: [String: SourceLocation] = [:]
        for (name, location) in names {
            if let first = seen[name] {
                error("\(kind) `\(name)` is already declared at \(first)", at: location)
            } else {
                seen[name] = location
            }
        }
    }

    mutating func checkMemberName(_ name: String, at location: SourceLocation) {
        if unusableMemberNames.contains(name) {
            error("`\(name)` cannot be a member name in Swift; rename it", at: location)
        }
    }

    mutating func checkType(_ type: SchemaType, at location: SourceLocation) {
        for name in type.referencedNames where !records.contains(where: { $0.name == name }) && !enums.contains(where: { $0.name == name }) {
            error("unknown type `\(name)`: declare it with (record \(name) …) or (enum \(name) …)", at: location)
        }
    }

    /// A record may contain itself only through a list; directly or through optionals it
    /// would have infinite size.
    mutating func checkRecordCycles() {
        let byName = Dictionary(records.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        func inlineRecords(_ type: SchemaType) -> [String] {
            switch type {
            case .named(let name): return byName[name] != nil ? [name] : []
            case .optional(let inner): return inlineRecords(inner)
            default: return []
            }
        }
        var reported = Set<String>()
        for record in records {
            // Depth-first search for a path of inline fields leading back to `record`.
            var stack: [(name: String, path: [String])] = [(record.name, [])]
            var visited = Set<String>()
            while let (name, path) = stack.popLast() {
                guard let current = byName[name] else { continue }
                for field in current.fields {
                    for target in inlineRecords(field.type) {
                        let fieldPath = path + ["\(current.name).\(field.name)"]
                        if target == record.name {
                            if reported.insert(record.name).inserted {
                                error("record `\(record.name)` contains itself through \(fieldPath.joined(separator: " → ")) without a list, so it would have infinite size; use (list \(target)) or restructure", at: record.location)
                            }
                        } else if visited.insert(target).inserted {
                            stack.append((target, fieldPath))
                        }
                    }
                }
            }
        }
    }

    /// Scope names are unique, and a scope grants only names its `device-*` allowlist exports.
    mutating func checkScopes() {
        checkUnique(scopes.map { ($0.name, $0.location) }, kind: "scope")
        let exported = [
            "device-rpcs": Set((allowlists["device-rpcs"]?.names ?? []).map(\.name)),
            "device-events": Set((allowlists["device-events"]?.names ?? []).map(\.name)),
            "device-state": Set((allowlists["device-state"]?.names ?? []).map(\.name)),
        ]
        let declared = [
            "device-rpcs": Set(rpcs.map(\.name)), "device-events": Set(events.map(\.name)),
            "device-state": Set(stateKeys.map(\.name)),
        ]
        for scope in scopes {
            let clauses: [(String, [SchemaNameReference], String, String)] = [
                ("rpcs", scope.rpcs, "device-rpcs", "rpc"),
                ("events", scope.events, "device-events", "event"),
                ("state-read", scope.stateRead, "device-state", "state"),
                ("state-write", scope.stateWrite, "device-state", "state"),
            ]
            for (clause, names, allowlist, form) in clauses {
                let kind = form == "state" ? "state key" : form
                for reference in names where !(exported[allowlist] ?? []).contains(reference.name) {
                    if (declared[allowlist] ?? []).contains(reference.name) {
                        error("\(kind) `\(reference.name)` in \(clause) of scope `\(scope.name)` is not in \(allowlist); a scope grants only exported names: add it to (\(allowlist) …) or remove it from the scope", at: reference.location)
                    } else {
                        error("\(kind) `\(reference.name)` in \(clause) of scope `\(scope.name)` is not declared; declare it with (\(form) \(reference.name) …), list it in (\(allowlist) …), or remove it from the scope", at: reference.location)
                    }
                }
            }
        }
    }

    mutating func checkAllowlist(_ keyword: String, declared: Set<String>, kind: String) {
        for reference in allowlists[keyword]?.names ?? [] where !declared.contains(reference.name) {
            error("\(kind) `\(reference.name)` in \(keyword) is not declared; declare it with (\(kind == "state key" ? "state" : kind) \(reference.name) …) or remove it from the list", at: reference.location)
        }
    }
}
