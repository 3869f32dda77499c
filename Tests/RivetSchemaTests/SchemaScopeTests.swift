import Foundation
import RivetSchema
import Testing

/// Declarations every scope test starts from: two RPCs, an event and a state key exported, and
/// one RPC, event and key that stay desktop-only.
private let surface = """
    (rpc current-score ((game-id string)) string)
    (rpc refresh-score () void)
    (rpc reset-scores () void)
    (event score-changed string)
    (event audit void)
    (state home-team string)
    (state secret string)
    (device-rpcs current-score refresh-score)
    (device-events score-changed)
    (device-state home-team)

    """

@Suite struct SchemaScopeTests {
    @Test func readsScopesWithEveryClause() throws {
        let schema = try Schema.parse(surface + """
            (scope viewer "Watch." (rpcs current-score) (events score-changed) (state-read home-team))
            (scope controller (state-write home-team) (rpcs . (refresh-score current-score)))
            (scope nothing.at_all)
            """, file: "rivet.rktd")
        #expect(schema.scopes.map(\.name) == ["viewer", "controller", "nothing.at_all"])
        let viewer = try #require(schema.scope(named: "viewer"))
        #expect(viewer.documentation == "Watch.")
        #expect(viewer.rpcs.map(\.name) == ["current-score"])
        #expect(viewer.events.map(\.name) == ["score-changed"])
        #expect(viewer.stateRead.map(\.name) == ["home-team"])
        #expect(viewer.stateWrite.isEmpty)
        #expect(viewer.location == SourceLocation(line: 11, column: 1))
        #expect(viewer.rpcs[0].location == SourceLocation(line: 11, column: 30))
        let controller = try #require(schema.scope(named: "controller"))
        #expect(controller.documentation == nil)
        #expect(controller.rpcs.map(\.name) == ["refresh-score", "current-score"])
        #expect(controller.stateWrite.map(\.name) == ["home-team"])
        #expect(controller.events.isEmpty && controller.stateRead.isEmpty)
        let empty = try #require(schema.scope(named: "nothing.at_all"))
        #expect(empty.rpcs.isEmpty && empty.events.isEmpty && empty.stateRead.isEmpty && empty.stateWrite.isEmpty)
    }

    @Test func scopesAreNoneByDefault() throws {
        #expect(try Schema.parse(surface, file: "rivet.rktd").scopes.isEmpty)
    }

    @Test(arguments: [
        ("(scope)", "rivet.rktd:11:1: error: `scope` needs a name: (scope NAME [DOC] (rpcs NAME …), (events NAME …), (state-read NAME …) or (state-write NAME …))"),
        ("(scope \"viewer\")", "rivet.rktd:11:8: error: scope name must be a symbol, found `\"viewer\"`"),
        ("(scope Viewer)", "rivet.rktd:11:8: error: `Viewer` is not a valid scope name: use 1 to 64 characters of a-z, 0-9, `-`, `_` and `.` (e.g. `viewer`)"),
        ("(scope view:er)", "rivet.rktd:11:8: error: `view:er` is not a valid scope name: use 1 to 64 characters of a-z, 0-9, `-`, `_` and `.` (e.g. `viewer`)"),
        ("(scope viewer (writes home-team))", "rivet.rktd:11:16: error: unknown clause `writes` in scope `viewer`; expected (rpcs NAME …), (events NAME …), (state-read NAME …) or (state-write NAME …)"),
        ("(scope viewer rpcs)", "rivet.rktd:11:15: error: a clause of scope `viewer` is written (rpcs NAME …), (events NAME …), (state-read NAME …) or (state-write NAME …), found `rpcs`"),
        ("(scope viewer (rpcs . current-score))", "rivet.rktd:11:15: error: a clause of scope `viewer` is written (rpcs NAME …), (events NAME …), (state-read NAME …) or (state-write NAME …), found `(rpcs . current-score)`"),
        ("(scope viewer \"a\" \"b\")", "rivet.rktd:11:19: error: a clause of scope `viewer` is written (rpcs NAME …), (events NAME …), (state-read NAME …) or (state-write NAME …), found `\"b\"`"),
        ("(scope viewer (rpcs current-score) (rpcs refresh-score))", "rivet.rktd:11:36: error: scope `viewer` has a second `rpcs` clause (first at 11:15); list every name in one clause"),
        ("(scope viewer (rpcs current-score current-score))", "rivet.rktd:11:35: error: `current-score` is listed twice in rpcs of scope `viewer` (first at 11:21)"),
        ("(scope viewer (events \"score-changed\"))", "rivet.rktd:11:23: error: name in events of scope `viewer` must be a symbol, found `\"score-changed\"`"),
        ("(scope viewer) (scope viewer)", "rivet.rktd:11:16: error: scope `viewer` is already declared at 11:1"),
        ("(scope viewer (rpcs reset-scores))", "rivet.rktd:11:21: error: rpc `reset-scores` in rpcs of scope `viewer` is not in device-rpcs; a scope grants only exported names: add it to (device-rpcs …) or remove it from the scope"),
        ("(scope viewer (rpcs current-scor))", "rivet.rktd:11:21: error: rpc `current-scor` in rpcs of scope `viewer` is not declared; declare it with (rpc current-scor …), list it in (device-rpcs …), or remove it from the scope"),
        ("(scope viewer (events audit))", "rivet.rktd:11:23: error: event `audit` in events of scope `viewer` is not in device-events; a scope grants only exported names: add it to (device-events …) or remove it from the scope"),
        ("(scope viewer (events tick))", "rivet.rktd:11:23: error: event `tick` in events of scope `viewer` is not declared; declare it with (event tick …), list it in (device-events …), or remove it from the scope"),
        ("(scope viewer (state-read secret))", "rivet.rktd:11:27: error: state key `secret` in state-read of scope `viewer` is not in device-state; a scope grants only exported names: add it to (device-state …) or remove it from the scope"),
        ("(scope viewer (state-write volume))", "rivet.rktd:11:28: error: state key `volume` in state-write of scope `viewer` is not declared; declare it with (state volume …), list it in (device-state …), or remove it from the scope"),
        ("(scope viewer (state-write secret))", "rivet.rktd:11:28: error: state key `secret` in state-write of scope `viewer` is not in device-state; a scope grants only exported names: add it to (device-state …) or remove it from the scope"),
        ("(scope viewer (rpcs home-team))", "rivet.rktd:11:21: error: rpc `home-team` in rpcs of scope `viewer` is not declared; declare it with (rpc home-team …), list it in (device-rpcs …), or remove it from the scope"),
        ("(scope . viewer)", "rivet.rktd:11:1: error: `scope` form must be a proper list (no `.` tail)"),
    ])
    func malformedScopeYieldsAPreciseDiagnostic(_ text: String, _ expected: String) {
        let found = diagnostics(surface + text)
        #expect(found == [expected])
    }

    @Test func scopeNameLengthIsBoundedAtTheEdge() throws {
        let atLimit = String(repeating: "s", count: 64)
        #expect(Schema.isValidScopeName(atLimit))
        #expect(!Schema.isValidScopeName(atLimit + "s"))
        #expect(!Schema.isValidScopeName(""))
        #expect(Schema.isValidScopeName("a-b_c.0"))
        #expect(try Schema.parse("(scope \(atLimit))", file: "rivet.rktd").scopes.count == 1)
        #expect(diagnostics("(scope \(atLimit)s)") == [
            "rivet.rktd:1:8: error: `\(atLimit)s` is not a valid scope name: use 1 to 64 characters of a-z, 0-9, `-`, `_` and `.` (e.g. `viewer`)",
        ])
    }

    @Test func everyScopeErrorIsReportedNotOnlyTheFirst() {
        let found = diagnostics(surface + """
            (scope a (rpcs reset-scores))
            (scope b (colour red))
            (scope a)
            """)
        #expect(found.map { $0.prefix(15) } == ["rivet.rktd:11:1", "rivet.rktd:12:1", "rivet.rktd:13:1"])
    }

    /// Scopes are policy, not wire contract: adding them changes neither the generated Swift
    /// nor the lock.
    @Test func scopesDoNotChangeGeneratedCodeOrTheLock() throws {
        let without = try Schema.parse(surface, file: "rivet.rktd")
        let with = try Schema.parse(surface + "(scope viewer (rpcs current-score) (state-read home-team))", file: "rivet.rktd")
        #expect(SwiftRenderer.render(with) == SwiftRenderer.render(without))
        #expect(SchemaLock(schema: with).text == SchemaLock(schema: without).text)
    }

    @Test func exampleSchemaDeclaresViewerAndController() throws {
        let url = ReferenceOutputTests.root.appendingPathComponent("examples/schema/rivet.rktd")
        let schema = try Schema.parse(try String(contentsOf: url, encoding: .utf8), file: "rivet.rktd")
        let viewer = try #require(schema.scope(named: "viewer"))
        #expect(viewer.rpcs.map(\.name) == ["current-score"])
        #expect(viewer.events.map(\.name) == ["score-changed"])
        #expect(viewer.stateRead.map(\.name) == ["home-team"])
        #expect(viewer.stateWrite.isEmpty)
        let controller = try #require(schema.scope(named: "controller"))
        #expect(controller.rpcs.map(\.name) == ["refresh-score"])
        #expect(controller.stateWrite.map(\.name) == ["home-team"])
        #expect(controller.events.isEmpty && controller.stateRead.isEmpty)
    }
}
