import Synchronization
import Testing

@testable import SQLiteKit

@Suite struct MigrationTests {
    @Test func freshDatabaseGoesToLatestAndRerunIsANoOp() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("m.db")
        let runs = Mutex(0)
        let migrations = testMigrations + [
            SQLiteMigration(version: 4) { db in
                runs.withLock { $0 += 1 }
                try db.execute("CREATE TABLE extra(x)")
            }
        ]
        let db = try SQLiteDatabase(path: path)
        #expect(try db.userVersion == 0)
        #expect(try db.migrate(migrations) == 4)
        #expect(try db.userVersion == 4)
        #expect(runs.withLock { $0 } == 1)
        let columns = try db.query("SELECT name FROM pragma_table_info('peer') ORDER BY cid").map { $0[0] }
        #expect(columns == ["id", "name", "writer", "payload", "seen"])
        db.close()
        let before = try #require(fileBytes(path))

        let again = try SQLiteDatabase(path: path)
        #expect(try again.migrate(migrations) == 4)
        #expect(try again.migrate(migrations) == 4)
        #expect(runs.withLock { $0 } == 1)
        #expect((fileBytes(path + "-wal") ?? []).isEmpty)  // nothing was written
        #expect(fileBytes(path) == before)
    }

    @Test func partlyMigratedDatabaseGetsOnlyTheRest() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        #expect(try db.migrate(Array(testMigrations.prefix(1))) == 1)
        try db.run("INSERT INTO peer(name) VALUES ('kept')")
        #expect(try db.migrate(testMigrations) == 3)
        #expect(try db.query("SELECT name, seen FROM peer").map(\.values) == [["kept", nil]])
    }

    @Test func schemaOneVersionTooNewIsRefusedWithoutWriting() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("m.db")
        do {
            let db = try SQLiteDatabase(path: path)
            try db.migrate(testMigrations)
            try db.setUserVersion(4)
        }
        let before = try #require(fileBytes(path))
        #expect(!exists(path + "-wal"))

        let db = try SQLiteDatabase(path: path)
        let error = #expect(throws: SQLiteError.schemaTooNew(found: 4, supported: 3)) {
            try db.migrate(testMigrations)
        }
        #expect(error?.isSchemaTooNew == true)
        #expect(error?.schemaVersions?.found == 4)
        #expect(error?.schemaVersions?.supported == 3)
        #expect(error?.description.contains("schema version 4") == true)
        #expect(error?.description.contains("supports up to 3") == true)
        db.close()
        #expect(fileBytes(path) == before)
        #expect(!exists(path + "-wal"))
    }

    @Test func schemaAtTheSupportedVersionIsAccepted() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        try db.execute("CREATE TABLE peer(id); PRAGMA user_version = 3")
        #expect(try db.migrate(testMigrations) == 3)
    }

    @Test func failingMigrationLeavesThePreviousVersion() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        let migrations = [
            testMigrations[0],
            SQLiteMigration(version: 2, sql: "CREATE TABLE half(x); SELEC 1;"),
        ]
        let error = #expect(throws: SQLiteError.sqlError) { try db.migrate(migrations) }
        #expect(error?.message.contains("syntax error") == true)
        #expect(try db.userVersion == 1)
        #expect(try db.query("SELECT name FROM sqlite_schema WHERE name = 'half'").isEmpty)
        #expect(try db.query("SELECT name FROM sqlite_schema WHERE name = 'peer'").count == 1)
        #expect(!db.isInTransaction)
    }

    @Test func migrationClosureErrorIsRethrown() throws {
        struct Refused: Error, Equatable {}
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        let migrations = [SQLiteMigration(version: 1) { _ in throw Refused() }]
        #expect(throws: Refused()) { try db.migrate(migrations) }
        #expect(try db.userVersion == 0)
    }

    @Test func migrationThatCommitsItselfIsReported() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        let migrations = [SQLiteMigration(version: 1, sql: "CREATE TABLE x(a); COMMIT;")]
        #expect(throws: SQLiteError.migrationEndedTransaction(version: 1)) { try db.migrate(migrations) }
        #expect(try db.userVersion == 0)
    }

    @Test(arguments: [Int32(2), -1])
    func versionNoMigrationProducesIsRefused(found: Int32) throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        try db.setUserVersion(found)
        let migrations = [testMigrations[0], SQLiteMigration(version: 3, sql: "CREATE TABLE y(a)")]
        #expect(throws: SQLiteError.unknownSchemaVersion(found: found)) { try db.migrate(migrations) }
        #expect(try db.userVersion == found)
    }

    @Test(arguments: [[Int32(0)], [-1], [2, 1], [1, 1], [1, 3, 3]])
    func invalidMigrationListsAreRefused(versions: [Int32]) throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        let migrations = versions.map { SQLiteMigration(version: $0, sql: "SELECT 1") }
        #expect(throws: SQLiteError.invalidMigrations) { try db.migrate(migrations) }
        #expect(try db.userVersion == 0)
    }

    @Test func sparseAscendingVersionsAndEmptyListAreValid() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        #expect(try db.migrate([]) == 0)
        let migrations = [
            SQLiteMigration(version: 1, sql: "CREATE TABLE a(x)"),
            SQLiteMigration(version: Int32.max, sql: "CREATE TABLE b(x)"),
        ]
        #expect(try db.migrate(migrations) == Int32.max)
        #expect(throws: SQLiteError.schemaTooNew(found: Int32.max, supported: 0)) { try db.migrate([]) }
    }

    @Test func migrateInsideATransactionIsRefused() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("m.db"))
        try db.transaction {
            #expect(throws: SQLiteError.transactionAlreadyOpen) { try db.migrate(testMigrations) }
        }
        #expect(try db.userVersion == 0)
    }

    @Test func readOnlyConnectionChecksAnUpToDateSchema() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("m.db")
        try SQLiteDatabase(path: path).migrate(Array(testMigrations.prefix(2)))
        let reader = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try reader.migrate(Array(testMigrations.prefix(2))) == 2)
        #expect(throws: SQLiteError.schemaTooNew(found: 2, supported: 1)) {
            try reader.migrate(Array(testMigrations.prefix(1)))
        }
        let error = #expect(throws: SQLiteError.readOnly) { try reader.migrate(testMigrations) }
        #expect(error?.isReadOnly == true)
    }
}
