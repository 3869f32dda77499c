/// One step of a schema's history: the change that takes a database to `version`.
public struct SQLiteMigration: Sendable {
    /// The `user_version` the database has after this migration; positive.
    public let version: Int32
    private let apply: @Sendable (SQLiteDatabase) throws -> Void

    /// A migration that runs `sql` (one or more statements, without BEGIN/COMMIT).
    public init(version: Int32, sql: String) {
        self.version = version
        self.apply = { try $0.execute(sql) }
    }

    /// A migration that runs `apply` with the database, inside the migration's transaction
    /// (so it must not call `transaction`, BEGIN, COMMIT or ROLLBACK).
    public init(version: Int32, apply: @escaping @Sendable (SQLiteDatabase) throws -> Void) {
        self.version = version
        self.apply = apply
    }

    func run(on database: SQLiteDatabase) throws {
        try apply(database)
    }
}

extension SQLiteDatabase {
    /// Brings the file's schema up to the last of `migrations`, which must have positive,
    /// strictly ascending versions.
    ///
    /// Each pending migration runs in its own `BEGIN IMMEDIATE` transaction together with
    /// `PRAGMA user_version = <its version>`, so a failing migration leaves the version at the
    /// previous one and nothing of itself behind. `user_version` is re-read inside each
    /// transaction, so two processes migrating the same fresh file at once apply every step once.
    /// Re-running on an up-to-date file writes nothing.
    ///
    /// - Returns: the schema version after migrating (the last migration's version, or 0 if the
    ///   list is empty).
    /// - Throws: `.schemaTooNew(found:supported:)` without writing anything when the file's
    ///   version is above the last known one; `.unknownSchemaVersion(found:)` when it is negative
    ///   or not one of the listed versions; `.invalidMigrations`; `.migrationEndedTransaction`;
    ///   `.transactionAlreadyOpen` if called inside a transaction; a failing migration's error.
    @discardableResult
    public func migrate(_ migrations: [SQLiteMigration]) throws -> Int32 {
        var previous: Int32 = 0
        for migration in migrations {
            guard migration.version > previous else {
                throw SQLiteError.invalidMigrations.with(
                    context: "migration \(migration.version) follows \(previous)")
            }
            previous = migration.version
        }
        let supported = previous
        let known = Set(migrations.map(\.version)).union([0])
        func check(_ found: Int32) throws {
            if found > supported { throw SQLiteError.schemaTooNew(found: found, supported: supported) }
            if !known.contains(found) { throw SQLiteError.unknownSchemaVersion(found: found) }
        }

        let found = try userVersion
        try check(found)
        for migration in migrations where migration.version > found {
            try transaction(.immediate) {
                // Another process may have migrated between the read above and this lock.
                let current = try userVersion
                try check(current)
                guard current < migration.version else { return }
                do {
                    try migration.run(on: self)
                } catch let error as SQLiteError where error.context == nil {
                    throw error.with(context: "migration \(migration.version)")
                }
                guard isInTransaction else {
                    throw SQLiteError.migrationEndedTransaction(version: migration.version)
                }
                try setUserVersion(migration.version)
            }
        }
        return try userVersion
    }
}
