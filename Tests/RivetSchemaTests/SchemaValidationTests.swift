import RivetSchema
import Testing

func diagnostics(_ text: String) -> [String] {
    do {
        _ = try Schema.parse(text, file: "rivet.rktd")
        return []
    } catch {
        return error.diagnostics.map(\.description)
    }
}

@Suite struct SchemaValidationTests {
    @Test func readsEveryDeclarationKind() throws {
        let schema = try Schema.parse("""
            (swift-access . public)
            (record score "Doc." (home uint32) (note (optional string)))
            (enum period first second)
            (rpc current-score ((game-id string)) score)
            (rpc refresh-score () void)
            (event score-changed score)
            (event reset void)
            (state home-team (list string))
            (device-rpcs . (current-score))
            (device-events reset)
            (device-state home-team)
            """, file: "rivet.rktd")
        #expect(schema.access == .public)
        #expect(schema.records.first?.documentation == "Doc.")
        #expect(schema.records.first?.fields.map(\.type) == [.uint32, .optional(.string)])
        #expect(schema.enums.first?.cases == ["first", "second"])
        #expect(schema.rpcs.map(\.name) == ["current-score", "refresh-score"])
        #expect(schema.rpcs[1].result == nil)
        #expect(schema.events[1].payload == nil)
        #expect(schema.stateKeys[0].type == .list(.string))
        #expect(schema.exportedRPCs.map(\.name) == ["current-score"])
        #expect(schema.exportedEvents.map(\.name) == ["reset"])
        #expect(schema.exportedStateKeys.map(\.name) == ["home-team"])
        #expect(schema.deviceRPCs.first?.location == SourceLocation(line: 9, column: 17))
    }

    @Test func allowlistsAreEmptyByDefault() throws {
        let schema = try Schema.parse("(rpc ping () void) (event e void) (state s bool)", file: "rivet.rktd")
        #expect(schema.exportedRPCs.isEmpty)
        #expect(schema.exportedEvents.isEmpty)
        #expect(schema.exportedStateKeys.isEmpty)
        #expect(schema.access == .internal)
        #expect(schema.wireTypeNames.isEmpty)
    }

    @Test func onlyTypesReachableFromTheSurfaceCarryAWireContract() throws {
        let schema = try Schema.parse("""
            (record a (b b) (c (list c)))
            (record b (x int8))
            (record c (e e))
            (enum e one)
            (record unrelated (x int8))
            (enum lonely one)
            (record for-event (x int8))
            (enum for-state one)
            (rpc get () (optional a))
            (rpc hidden ((u unrelated)) lonely)
            (event ev for-event)
            (state st (list for-state))
            (device-rpcs get) (device-events ev) (device-state st)
            """, file: "rivet.rktd")
        #expect(schema.wireTypeNames == ["a", "b", "c", "e", "for-event", "for-state"])
    }

    @Test func missingAllowlistedNamesArePointedAt() {
        #expect(diagnostics("(rpc ping () void)\n(device-rpcs . (ping current-score))") == [
            "rivet.rktd:2:22: error: rpc `current-score` in device-rpcs is not declared; declare it with (rpc current-score …) or remove it from the list",
        ])
        #expect(diagnostics("(device-events tick) (device-state volume)") == [
            "rivet.rktd:1:16: error: event `tick` in device-events is not declared; declare it with (event tick …) or remove it from the list",
            "rivet.rktd:1:36: error: state key `volume` in device-state is not declared; declare it with (state volume …) or remove it from the list",
        ])
    }

    @Test(arguments: [
        ("(records x)", "rivet.rktd:1:2: error: unknown form `records`; expected record, enum, rpc, event, state, device-rpcs, device-events, device-state, scope or swift-access"),
        ("hello", "rivet.rktd:1:1: error: expected a form such as (record …) or (rpc …), found `hello`"),
        ("()", "rivet.rktd:1:1: error: expected a form such as (record …) or (rpc …), found `()`"),
        ("(\"rpc\" x)", "rivet.rktd:1:2: error: a form starts with its kind (record, enum, rpc, event, state, device-rpcs, device-events, device-state, scope or swift-access), found `\"rpc\"`"),
        ("(record)", "rivet.rktd:1:1: error: `record` needs a name: (record NAME …)"),
        ("(record Score)", "rivet.rktd:1:9: error: `Score` is not a valid record name: use lowercase words of a-z and 0-9 joined by single hyphens, starting with a letter, at most 64 characters (e.g. `current-score`)"),
        ("(record a--b)", "rivet.rktd:1:9: error: `a--b` is not a valid record name: use lowercase words of a-z and 0-9 joined by single hyphens, starting with a letter, at most 64 characters (e.g. `current-score`)"),
        ("(record game_id)", "rivet.rktd:1:9: error: `game_id` is not a valid record name: use lowercase words of a-z and 0-9 joined by single hyphens, starting with a letter, at most 64 characters (e.g. `current-score`)"),
        ("(record r (x))", "rivet.rktd:1:11: error: a field of record `r` is written (NAME TYPE), found `(x)`"),
        ("(record r (x Any))", "rivet.rktd:1:14: error: type `Any` is not supported: every device payload needs a declared shape; use a record, an enum or a primitive"),
        ("(rpc r () any)", "rivet.rktd:1:11: error: type `any` is not supported: every device payload needs a declared shape; use a record, an enum or a primitive"),
        ("(record r (x void))", "rivet.rktd:1:14: error: `void` is only allowed as an RPC result or an event payload"),
        ("(rpc r ((x void)) void)", "rivet.rktd:1:12: error: `void` is only allowed as an RPC result or an event payload"),
        ("(state s void)", "rivet.rktd:1:10: error: `void` is only allowed as an RPC result or an event payload"),
        ("(record r (x (optional (optional int8))))", "rivet.rktd:1:14: error: (optional (optional …)) cannot be told apart from (optional …) in JSON; use one optional"),
        ("(record r (x (list)))", "rivet.rktd:1:14: error: `list` takes exactly one type: (list TYPE)"),
        ("(record r (x list))", "rivet.rktd:1:14: error: `list` takes a type: write (list TYPE)"),
        ("(record r (x (map string int8)))", "rivet.rktd:1:14: error: `(map string int8)` is not a type: compound types are (list T) and (optional T)"),
        ("(record r (x Int32))", "rivet.rktd:1:14: error: `Int32` is not a type: expected a primitive (string, bool, int8…int64, uint8…uint64, double, bytes), (list T), (optional T) or a record or enum name"),
        ("(record r (x scor))", "rivet.rktd:1:11: error: unknown type `scor`: declare it with (record scor …) or (enum scor …)"),
        ("(record r (x int8) (x int16))", "rivet.rktd:1:20: error: field of record `r` `x` is already declared at 1:11"),
        ("(record r) (enum r a)", "rivet.rktd:1:12: error: enum `r` is already declared at 1:1"),
        ("(rpc p () void) (rpc p () void)", "rivet.rktd:1:17: error: rpc `p` is already declared at 1:1"),
        ("(enum e)", "rivet.rktd:1:1: error: enum `e` needs at least one case: (enum e CASE …)"),
        ("(enum e a b a)", "rivet.rktd:1:13: error: enum `e` lists case `a` twice (first at 1:9)"),
        ("(enum e self)", "rivet.rktd:1:9: error: `self` cannot be an enum case in Swift; rename it"),
        ("(record r (init int8))", "rivet.rktd:1:11: error: `init` cannot be a member name in Swift; rename it"),
        ("(record string)", "rivet.rktd:1:1: error: record name `string` is reserved; choose another name"),
        ("(enum swift a)", "rivet.rktd:1:1: error: enum name `swift` is reserved; choose another name"),
        ("(record rivet-unit-response)", "rivet.rktd:1:1: error: record name `rivet-unit-response` starts with `rivet`, which generated code reserves; choose another name"),
        ("(rpc p (x) void)", "rivet.rktd:1:9: error: a field of rpc `p` is written (NAME TYPE), found `x`"),
        ("(rpc p ())", "rivet.rktd:1:1: error: rpc `p` is written (rpc p ((ARG TYPE) …) RESULT); use () for no arguments and void for no result"),
        ("(rpc p x void)", "rivet.rktd:1:1: error: rpc `p` is written (rpc p ((ARG TYPE) …) RESULT); use () for no arguments and void for no result"),
        ("(event e)", "rivet.rktd:1:1: error: event `e` is written (event e PAYLOAD-TYPE); use void for no payload"),
        ("(state s)", "rivet.rktd:1:1: error: state `s` is written (state s TYPE)"),
        ("(record . x)", "rivet.rktd:1:1: error: `record` form must be a proper list (no `.` tail)"),
        ("(swift-access open)", "rivet.rktd:1:1: error: `swift-access` is written (swift-access public) or (swift-access internal)"),
        ("(swift-access public) (swift-access public)", "rivet.rktd:1:23: error: `swift-access` appears twice (first at 1:1)"),
        ("(rpc p () void) (device-rpcs p) (device-rpcs p)", "rivet.rktd:1:33: error: `device-rpcs` appears twice (first at 1:17); list every name in one form"),
        ("(rpc p () void) (device-rpcs p p)", "rivet.rktd:1:32: error: `p` is listed twice in device-rpcs (first at 1:30)"),
        ("(device-rpcs \"p\")", "rivet.rktd:1:14: error: name in device-rpcs must be a symbol, found `\"p\"`"),
        ("(rpc close () void) (device-rpcs close)", "rivet.rktd:1:1: error: rpc `close` would collide with RivetDeviceClient.close; rename it"),
        ("(rpc p ((timeout int8)) void) (device-rpcs p)", "rivet.rktd:1:9: error: argument `timeout` of rpc `p` collides with the generated method's timeout parameter; rename it"),
        ("(record ping-request) (rpc ping () void) (device-rpcs ping)", "rivet.rktd:1:23: error: rpc `ping` generates type PingRequest, which a record or enum already uses; rename one"),
        ("(record node (next (optional node)))", "rivet.rktd:1:1: error: record `node` contains itself through node.next without a list, so it would have infinite size; use (list node) or restructure"),
        ("(record a (b b)) (record b (a (optional a)))", "rivet.rktd:1:1: error: record `a` contains itself through a.b → b.a without a list, so it would have infinite size; use (list a) or restructure"),
    ])
    func malformedSchemaYieldsAPreciseDiagnostic(_ text: String, _ expected: String) {
        let found = diagnostics(text)
        #expect(found.first == expected, "all diagnostics: \(found)")
    }

    @Test func recursionThroughAListIsAllowed() throws {
        let schema = try Schema.parse("(record tree (children (list tree)) (parent (optional (list tree))))", file: "rivet.rktd")
        #expect(schema.records.count == 1)
    }

    @Test func everyErrorIsReportedNotOnlyTheFirst() {
        let found = diagnostics("""
            (record r (x scor))
            (rpc p () Any)
            (device-rpcs missing)
            """)
        #expect(found.count == 3)
        #expect(found.map { $0.prefix(14) } == ["rivet.rktd:1:1", "rivet.rktd:2:1", "rivet.rktd:3:1"])
    }

    @Test func syntaxErrorsComeFromTheParser() {
        #expect(diagnostics("(record r") == ["rivet.rktd:1:1: error: `(` is never closed"])
    }

    @Test func nameLengthIsBoundedAtTheEdge() throws {
        let atLimit = "a" + String(repeating: "b", count: 63)
        #expect(Schema.isValidName(atLimit))
        #expect(!Schema.isValidName(atLimit + "c"))
        #expect(try Schema.parse("(rpc \(atLimit) () void)", file: "rivet.rktd").rpcs.count == 1)
        #expect(diagnostics("(rpc \(atLimit)c () void)").count == 1)
    }
}
