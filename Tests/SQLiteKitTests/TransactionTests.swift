import Testing

@testable import SQLiteKit

private struct BodyFailed: Error, Equatable {
    let detail: String
}

@Suite struct TransactionTests {
    private func database(_ dir: TemporaryDirectory) throws -> SQLiteDatabase {
        let db = try SQLiteDatabase(path: dir.file("tx.db"))
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT UNIQUE)")
        return db
    }

    @Test(arguments: [SQLiteTransactionKind.deferred, .immediate, .exclusive])
    func commitsOnReturn(kind: SQLiteTransactionKind) throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        let id = try db.transaction(kind) {
            #expect(db.isInTransaction)
            try db.run("INSERT INTO t(v) VALUES (?)", ["kept"])
            return db.lastInsertRowID
        }
        #expect(id == 1)
        #expect(!db.isInTransaction)
        let other = try SQLiteDatabase(path: dir.file("tx.db"), readOnly: true)
        #expect(try other.query("SELECT v FROM t").map(\.values) == [["kept"]])
    }

    @Test func rollsBackAndRethrowsTheBodysError() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        #expect(throws: BodyFailed(detail: "original")) {
            try db.transaction {
                try db.run("INSERT INTO t(v) VALUES (?)", ["discarded"])
                throw BodyFailed(detail: "original")
            }
        }
        #expect(!db.isInTransaction)
        #expect(try count(db, "t") == 0)
    }

    @Test func rollsBackOnASQLiteErrorInTheBody() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        try db.run("INSERT INTO t(v) VALUES ('a')")
        let error = #expect(throws: SQLiteError.constraint) {
            try db.transaction {
                try db.run("INSERT INTO t(v) VALUES ('b')")
                try db.run("INSERT INTO t(v) VALUES ('a')")
            }
        }
        #expect(error?.extendedResultCode == Extended.constraintUnique)
        #expect(try db.query("SELECT v FROM t").map(\.values) == [["a"]])
    }

    @Test func nestedTransactionIsRefusedAndOuterStillCommits() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        try db.transaction {
            try db.run("INSERT INTO t(v) VALUES ('outer')")
            #expect(throws: SQLiteError.transactionAlreadyOpen) {
                try db.transaction { try db.run("INSERT INTO t(v) VALUES ('inner')") }
            }
            #expect(db.isInTransaction)
        }
        #expect(try db.query("SELECT v FROM t").map(\.values) == [["outer"]])
    }

    @Test func manualBeginCountsAsAnOpenTransaction() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        try db.execute("BEGIN")
        #expect(throws: SQLiteError.transactionAlreadyOpen) { try db.transaction {} }
        try db.execute("ROLLBACK")
        try db.transaction {}
    }

    @Test func failedCommitRollsBack() throws {
        let dir = try TemporaryDirectory()
        let db = try database(dir)
        try db.execute(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
            """)
        let error = #expect(throws: SQLiteError.constraint) {
            try db.transaction {
                try db.run("INSERT INTO child VALUES (42)")  // checked only at COMMIT
            }
        }
        #expect(error?.extendedResultCode == Extended.constraintForeignKey)
        #expect(error?.context?.contains("COMMIT") == true)
        #expect(!db.isInTransaction)
        #expect(try count(db, "child") == 0)
    }
}
