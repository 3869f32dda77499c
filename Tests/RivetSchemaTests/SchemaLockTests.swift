import RivetSchema
import Testing

let base = """
    (record score (home uint32) (period period))
    (enum period first second)
    (record tree (children (list tree)))
    (rpc current-score ((game-id string)) score)
    (rpc refresh-score () void)
    (rpc grow ((t tree)) tree)
    (event changed score)
    (state team string)
    (device-rpcs current-score refresh-score grow)
    (device-events changed)
    (device-state team)
    """

func compare(_ schemaText: String, against lockedText: String = base) throws -> SchemaLock.Comparison {
    let lock = try SchemaLock(parsing: SchemaLock(schema: try Schema.parse(lockedText, file: "old.rktd")).text, file: "rivet.lock")
    return SchemaLock(schema: try Schema.parse(schemaText, file: "rivet.rktd"))
        .compare(withLock: lock, schemaFile: "rivet.rktd", lockFile: "rivet.lock")
}

@Suite struct SchemaLockTests {
    @Test func lockTextIsCanonicalAndRoundTrips() throws {
        let lock = SchemaLock(schema: try Schema.parse(base, file: "rivet.rktd"))
        #expect(lock.text == """
            ;; The device surface exported by the schema. Written by rivet-generate --write-lock;
            ;; rivet-generate --check-lock reports removed or changed entries as breaks.
            (rivet-lock 1)
            (rpc current-score (args (game-id string)) (result (record score (home uint32) (period (enum period first second)))))
            (rpc refresh-score (args) (result void))
            (rpc grow (args (t (record tree (children (list (ref tree)))))) (result (record tree (children (list (ref tree))))))
            (event changed (payload (record score (home uint32) (period (enum period first second)))))
            (state team (value string))

            """)
        let reread = try SchemaLock(parsing: lock.text, file: "rivet.lock")
        #expect(reread.entries.map(\.signature) == lock.entries.map(\.signature))
        #expect(try compare(base).isCompatible)
        #expect(try compare(base).additions.isEmpty)
    }

    @Test func addingAnExportIsCompatible() throws {
        let comparison = try compare(base.replacingOccurrences(of: "(device-rpcs current-score refresh-score grow)", with: "(rpc ping () void)\n(device-rpcs current-score refresh-score grow ping)"))
        #expect(comparison.isCompatible)
        #expect(comparison.additions == ["rpc ping"])
    }

    @Test func removingAnExportedRPCIsABreak() throws {
        let comparison = try compare(base.replacingOccurrences(of: "(device-rpcs current-score refresh-score grow)", with: "(device-rpcs current-score grow)"))
        #expect(comparison.breaks.map(\.description) == [
            "rivet.lock:5:1: error: rpc `refresh-score` is in the lock but no longer exported; removing it breaks devices built against the lock",
        ])
    }

    @Test func changingASignatureDeepInsideARecordIsABreak() throws {
        let comparison = try compare(base.replacingOccurrences(of: "(home uint32)", with: "(home uint64)"))
        #expect(comparison.breaks.count == 2)
        #expect(comparison.breaks[0].description.hasPrefix("rivet.rktd:4:1: error: rpc `current-score` changed its wire signature since the lock"))
        #expect(comparison.breaks[0].message.hasSuffix("now (rpc current-score (args (game-id string)) (result (record score (home uint64) (period (enum period first second)))))"))
        #expect(comparison.breaks[1].description.hasPrefix("rivet.rktd:7:1: error: event `changed` changed its wire signature"))
    }

    @Test(arguments: [
        ("(rpc current-score ((game-id string) (extra int8)) score)", "rpc `current-score`"),
        ("(rpc refresh-score () bool)", "rpc `refresh-score`"),
        ("(enum period first second third)", "rpc `current-score`"),
        ("(state team (optional string))", "state `team`"),
    ])
    func signatureChangesAreBreaks(_ replacement: String, _ broken: String) throws {
        let lines = base.split(separator: "\n").map(String.init)
        let key = replacement.split(separator: " ").prefix(2).joined(separator: " ")
        let changed = lines.map { $0.hasPrefix(key) ? replacement : $0 }.joined(separator: "\n")
        let comparison = try compare(changed)
        #expect(!comparison.isCompatible)
        #expect(comparison.breaks.contains { $0.message.hasPrefix("\(broken) changed its wire signature") })
    }

    @Test(arguments: [
        ("", "rivet.lock:1:1: error: lock file is empty; expected (rivet-lock 1)"),
        ("(rivet-lock 2)", "rivet.lock:1:1: error: lock file format `(rivet-lock 2)` is not supported; this generator reads (rivet-lock 1)"),
        ("(rpc x)", "rivet.lock:1:1: error: lock file must start with (rivet-lock 1), found `(rpc x)`"),
        ("(rivet-lock 1)\n(func x y)", "rivet.lock:2:1: error: lock entry must be (rpc NAME …), (event NAME …) or (state NAME …), found `(func x y)`"),
        ("(rivet-lock 1)\n(rpc x (args))\n(rpc x (args))", "rivet.lock:3:1: error: rpc `x` appears twice in the lock"),
        ("(rivet-lock 1", "rivet.lock:1:1: error: `(` is never closed"),
    ])
    func malformedLockYieldsADiagnostic(_ text: String, _ expected: String) {
        do {
            _ = try SchemaLock(parsing: text, file: "rivet.lock")
            Issue.record("lock parsed")
        } catch {
            #expect(error.diagnostics.first?.description == expected)
        }
    }
}
