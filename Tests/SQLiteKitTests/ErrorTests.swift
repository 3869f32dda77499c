import Glibc
import Testing

@testable import SQLiteKit

@Suite struct ErrorTests {
    @Test func syntaxErrorCarriesSQLitesMessage() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("e.db"))
        let error = #expect(throws: SQLiteError.sqlError) { try db.prepare("SELEC 1") }
        #expect(error?.message == "near \"SELEC\": syntax error")
        #expect(error?.resultCode == 1)
        #expect(error?.extendedResultCode == 1)
        #expect(error?.context == "prepare \"SELEC 1\"")
        #expect(error?.description == "prepare \"SELEC 1\": near \"SELEC\": syntax error (SQLite result code 1)")
        #expect(throws: SQLiteError.sqlError) { try db.execute("CREATE TABLE ok(x); SELEC 1") }
        #expect(try db.query("SELECT name FROM sqlite_schema").map { $0[0] } == ["ok"])
    }

    @Test func missingTableNamesIt() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("e.db"))
        let error = #expect(throws: SQLiteError.sqlError) { try db.query("SELECT * FROM nowhere") }
        #expect(error?.message == "no such table: nowhere")
    }

    @Test func constraintViolationsAreTyped() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("e.db"))
        try db.migrate(testMigrations)
        try db.run("INSERT INTO peer(name) VALUES (?)", ["a"])
        let unique = #expect(throws: SQLiteError.constraint) {
            try db.run("INSERT INTO peer(name) VALUES (?)", ["a"])
        }
        #expect(unique?.isConstraintViolation == true)
        #expect(unique?.extendedResultCode == Extended.constraintUnique)
        #expect(unique?.message == "UNIQUE constraint failed: peer.name")
        let notNull = #expect(throws: SQLiteError.constraint) {
            try db.run("INSERT INTO peer(name) VALUES (?)", [nil])
        }
        #expect(notNull?.extendedResultCode == Extended.constraintNotNull)
        #expect(notNull?.message == "NOT NULL constraint failed: peer.name")
        let strict = #expect(throws: SQLiteError.constraint) {
            try db.run("INSERT INTO peer(name, seen) VALUES ('b', ?)", ["not a number"])
        }
        #expect(strict?.message.contains("cannot store TEXT value in INTEGER column") == true)
    }

    @Test(arguments: [4096, 100, 10])
    func garbageFileIsNotADatabaseAndIsLeftUntouched(size: Int) throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("garbage.db")
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[0] = 0x00  // never the "SQLite format 3" magic by chance
        try writeFile(path, bytes)
        for readOnly in [false, true] {
            let error = #expect(throws: SQLiteError.notADatabase) {
                try SQLiteDatabase(path: path, readOnly: readOnly)
            }
            #expect(error?.isNotADatabase == true)
            #expect(error?.isCorrupt == true)
            #expect(error?.message == "file is not a database")
            #expect(error?.context?.contains(path) == true)
        }
        #expect(fileBytes(path) == bytes)
        #expect(!exists(path + "-wal"))
    }

    /// Makes a database with table `t` whose rows fill several pages, and returns its bytes.
    private func makeDatabase(_ path: String) throws -> [UInt8] {
        let db = try SQLiteDatabase(path: path)
        try db.execute("CREATE TABLE t(x)")
        for _ in 0..<8 { try db.run("INSERT INTO t VALUES (randomblob(3000))") }
        db.close()
        return try #require(fileBytes(path))
    }

    @Test func truncatedDatabaseIsCorruptAtOpen() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("cut.db")
        let bytes = try makeDatabase(path)
        #expect(truncate(path, off_t(bytes.count / 2)) == 0)
        let error = #expect(throws: SQLiteError.corrupt) { try SQLiteDatabase(path: path) }
        #expect(error?.isCorrupt == true)
        #expect(error?.message == "database disk image is malformed")
    }

    @Test func scribbledDataPageIsCorruptOnRead() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("scribbled.db")
        var bytes = try makeDatabase(path)
        // Page 2 (bytes 4096..<8192) is the root page of table t; page 1 holds the schema.
        for offset in 4096..<8192 { bytes[offset] = 0xA5 }
        #expect(unlink(path) == 0)
        try writeFile(path, bytes)
        let db = try SQLiteDatabase(path: path)
        #expect(throws: SQLiteError.corrupt) { try db.query("PRAGMA integrity_check") }
        let error = #expect(throws: SQLiteError.corrupt) { try db.query("SELECT length(x) FROM t") }
        #expect(error?.isCorrupt == true)
    }

    @Test func readOnlyConnectionRefusesWrites() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("ro.db")
        do {
            let db = try SQLiteDatabase(path: path)
            try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        }
        let db = try SQLiteDatabase(path: path, readOnly: true)
        #expect(db.isReadOnly)
        #expect(try count(db, "t") == 1)
        let error = #expect(throws: SQLiteError.readOnly) { try db.run("INSERT INTO t VALUES (2)") }
        #expect(error?.isReadOnly == true)
        #expect(error?.message == "attempt to write a readonly database")
        #expect(throws: SQLiteError.readOnly) { try db.transaction { try db.run("DELETE FROM t") } }
        #expect(!db.isInTransaction)
        #expect(try count(db, "t") == 1)
    }

    @Test func equalityComparesTheKindOnly() {
        #expect(SQLiteError.busy == .busy)
        #expect(SQLiteError.busy != .locked)
        #expect(SQLiteError.busy.isBusy)
        #expect(!SQLiteError.locked.isBusy)
        #expect(SQLiteError.full.isFull)
        #expect(SQLiteError.corrupt.isCorrupt)
        #expect(!SQLiteError.corrupt.isNotADatabase)
        #expect(SQLiteError.schemaTooNew(found: 2, supported: 1) == .schemaTooNew(found: 2, supported: 1))
        #expect(SQLiteError.schemaTooNew(found: 3, supported: 1) != .schemaTooNew(found: 2, supported: 1))
        #expect(SQLiteError.busy.message == "database is locked")
        #expect(SQLiteError.schemaTooNew(found: 2, supported: 1).resultCode == nil)
        #expect(Set([SQLiteError.busy, .busy, .full]).count == 2)
    }
}
