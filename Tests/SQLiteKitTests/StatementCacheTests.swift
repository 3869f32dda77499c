import Testing

@testable import SQLiteKit

/// `query(_:_:cached:)`, `run(_:_:cached:)` and `transaction`'s cached `BEGIN` and `COMMIT`.
@Suite struct StatementCacheTests {
    private func database(_ dir: TemporaryDirectory) throws -> SQLiteDatabase {
        let db = try SQLiteDatabase(path: dir.file("cache.db"))
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")
        try db.run("INSERT INTO t(v) VALUES ('a'), ('b')")
        return db
    }

    @Test func aCachedQueryIsCompiledOnce() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        let before = db.statementsCompiled
        for _ in 0..<3 {
            #expect(try db.query("SELECT v FROM t WHERE id = ?", [.integer(2)], cached: true).map(\.values) == [["b"]])
        }
        #expect(db.statementsCompiled == before + 1)
        // Without `cached`, every call compiles.
        for _ in 0..<3 { _ = try db.query("SELECT v FROM t WHERE id = ?", [.integer(2)]) }
        #expect(db.statementsCompiled == before + 4)
    }

    @Test func aCachedStatementTakesEachCallsBindings() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        let sql = "SELECT v FROM t WHERE id = ?"
        #expect(try db.query(sql, [.integer(1)], cached: true).map(\.values) == [["a"]])
        #expect(try db.query(sql, [.integer(2)], cached: true).map(\.values) == [["b"]])
        #expect(try db.query(sql, [.integer(3)], cached: true).isEmpty)
        #expect(throws: SQLiteError.parameterCountMismatch(expected: 1, given: 0)) { try db.query(sql, cached: true) }
        #expect(try db.run("UPDATE t SET v = ? WHERE id = ?", ["c", .integer(1)], cached: true) == 1)
        #expect(try db.run("UPDATE t SET v = ? WHERE id = ?", ["d", .integer(9)], cached: true) == 0)
        #expect(try db.query(sql, [.integer(1)], cached: true).map(\.values) == [["c"]])
    }

    @Test func aCachedStatementHoldsNoSnapshotBetweenCalls() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        _ = try db.query("SELECT v FROM t", cached: true)
        // Another connection's write, then a checkpoint that needs every reader gone.
        let other = try SQLiteDatabase(path: dir.file("cache.db"))
        try other.run("INSERT INTO t(v) VALUES ('e')")
        #expect(try other.query("PRAGMA wal_checkpoint(TRUNCATE)").first?[0].integer == 0)
        #expect(try db.query("SELECT v FROM t", cached: true).count == 3)
    }

    @Test func aSchemaChangeRecompilesTheCachedStatement() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        #expect(try db.query("SELECT * FROM t WHERE id = 1", cached: true).first?.columnNames == ["id", "v"])
        try db.execute("ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'x'")
        let row = try #require(try db.query("SELECT * FROM t WHERE id = 1", cached: true).first)
        #expect(row.columnNames == ["id", "v", "w"])
        #expect(row.values == [.integer(1), "a", "x"])
        // A change made by another connection too.
        let other = try SQLiteDatabase(path: dir.file("cache.db"))
        try other.execute("DROP TABLE t; CREATE TABLE t(id INTEGER PRIMARY KEY, z INTEGER); INSERT INTO t VALUES (1, 7)")
        let again = try #require(try db.query("SELECT * FROM t WHERE id = 1", cached: true).first)
        #expect(again.columnNames == ["id", "z"])
        #expect(again.values == [.integer(1), .integer(7)])
        try other.execute("DROP TABLE t")
        #expect(throws: SQLiteError.self) { try db.query("SELECT * FROM t WHERE id = 1", cached: true) }
    }

    @Test func aClosedDatabaseUsesNoCachedStatement() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        _ = try db.query("SELECT v FROM t", cached: true)
        try db.transaction {}
        db.close()
        #expect(throws: SQLiteError.closed) { try db.query("SELECT v FROM t", cached: true) }
        #expect(throws: SQLiteError.closed) { try db.run("UPDATE t SET v = 'z'", cached: true) }
        #expect(throws: SQLiteError.closed) { try db.transaction {} }
        // A new connection to the file starts with its own, empty cache.
        let reopened = try SQLiteDatabase(path: dir.file("cache.db"))
        let before = reopened.statementsCompiled
        #expect(try reopened.query("SELECT v FROM t", cached: true).count == 2)
        #expect(reopened.statementsCompiled == before + 1)
    }

    @Test func transactionsCompileBeginAndCommitOnce() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        try db.transaction(.deferred) {}
        let before = db.statementsCompiled
        for _ in 0..<3 { try db.transaction(.deferred) { _ = try db.query("SELECT 1", cached: true) } }
        #expect(db.statementsCompiled == before + 1)
        // A failed body still rolls back through the cached statements' connection.
        #expect(throws: SQLiteError.self) {
            try db.transaction(.deferred) { try db.run("INSERT INTO t(id, v) VALUES (1, 'dup')", cached: true) }
        }
        #expect(!db.isInTransaction)
        #expect(try db.query("SELECT count(*) FROM t").first?[0].integer == 2)
    }

    @Test func theCacheStaysBounded() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        let capacity = SQLiteDatabase.statementCacheCapacity
        for index in 0..<(capacity * 2 + 1) {
            #expect(try db.query("SELECT \(index)", cached: true).first?[0].integer == Int64(index))
        }
        #expect(db.cachedStatementCount <= capacity)
        #expect(db.cachedStatementCount >= 1)
    }
}
