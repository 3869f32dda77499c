import ByteText
import CSQLite
import Glibc
import SystemKit

/// The kind of lock a transaction takes at `BEGIN`.
public enum SQLiteTransactionKind: Sendable {
    /// `BEGIN DEFERRED`: locks on first use. In WAL mode a read-then-write transaction may then
    /// fail with `SQLITE_BUSY` at once (without waiting) when another writer got in first.
    case deferred
    /// `BEGIN IMMEDIATE`: takes the write lock at once, waiting up to the busy timeout. The
    /// right choice for read-modify-write.
    case immediate
    /// `BEGIN EXCLUSIVE`: in WAL mode the same as immediate.
    case exclusive

    var beginSQL: String {
        switch self {
        case .deferred: "BEGIN DEFERRED"
        case .immediate: "BEGIN IMMEDIATE"
        case .exclusive: "BEGIN EXCLUSIVE"
        }
    }
}

/// One connection to an SQLite database file.
///
/// Threading: the connection is opened with `SQLITE_OPEN_NOMUTEX` (SQLite's multi-thread mode:
/// no per-call locking) and the type is deliberately not `Sendable`. It has one owner, used by
/// one thread at a time, e.g. an actor that creates it or a `Mutex` that holds it. Separate
/// connections (in one process or several) to the same file are safe: SQLite's file locks and
/// the busy timeout arbitrate between them.
///
/// On open the connection is configured as follows:
/// - `journal_mode=WAL` (verified; read-only connections keep the file's mode, and so does an
///   open with `enablesWAL: false` until ``enableWAL()``), so readers never block the writer;
///   `synchronous=FULL`, so a committed transaction survives power loss;
/// - `foreign_keys=ON` (verified) and the busy timeout;
/// - defensive mode (`SQLITE_DBCONFIG_DEFENSIVE`) and `trusted_schema` off, so a hostile file
///   cannot corrupt itself through `writable_schema` or run unsafe functions from its schema;
/// - the schema is read once, so a file that is not a database fails at `init`, not later.
public final class SQLiteDatabase {
    /// The path given at open.
    public let path: String
    /// True if the connection was opened read-only.
    public let isReadOnly: Bool
    /// The permission bits (`st_mode & 0o7777`) of the database file when it was opened. A file
    /// SQLiteKit creates is `0o600`; an existing file is reported as found and never changed.
    /// SQLite gives the `-wal` and `-shm` files the same bits.
    public let fileMode: UInt32
    /// The owner's user ID of the database file when it was opened.
    public let fileOwnerID: UInt32

    private var handle: OpaquePointer?
    private let busyTimeoutMilliseconds: Int32
    /// Statements kept compiled for reuse, by SQL text: those `query` and `run` were asked to
    /// cache, and `transaction`'s `BEGIN` and `COMMIT`. Each is reset with its bindings cleared
    /// after every use, so none holds a read snapshot or a bound value between uses.
    private var statementCache: [String: SQLiteStatement] = [:]
    /// At most this many statements stay cached; one more empties the cache first.
    static let statementCacheCapacity = 32

    /// How many statements this connection compiled (`prepare`, each statement of `execute`,
    /// every `query` and `run` but those its statement cache served).
    public internal(set) var statementsCompiled = 0

    /// How many statements the cache holds now.
    var cachedStatementCount: Int { statementCache.count }

    /// Opens (and, unless `readOnly`, creates) the database at `path`.
    ///
    /// A missing file is created with mode exactly `0o600` (`O_CREAT|O_EXCL|O_NOFOLLOW`, then
    /// `fchmod`, so the umask cannot widen or narrow it). An existing file's mode is left alone
    /// and reported in `fileMode`. The last path component must not be a symbolic link (checked
    /// before open and again by SQLite through `SQLITE_OPEN_NOFOLLOW`); directories in the path
    /// may be links.
    ///
    /// - Parameters:
    ///   - path: a file path; not empty, no NUL byte, not `:memory:`.
    ///   - busyTimeout: how long a statement waits for another connection's lock before failing
    ///     with `isBusy`; from zero to `Int32.max` milliseconds (sub-millisecond parts dropped).
    ///   - readOnly: open without write access; the file must exist, and every write fails with
    ///     `isReadOnly`. Nothing is created: when no `-wal`, `-shm` or `-journal` companion
    ///     exists (no connection has the file open in WAL mode), the file is opened with
    ///     SQLite's `immutable=1`, which would otherwise create the WAL companions.
    ///   - enablesWAL: switch the file to WAL at open (ignored when `readOnly`). Pass false to
    ///     look at a file before changing anything in it (the switch rewrites its header), then
    ///     call ``enableWAL()``.
    /// - Throws: `SQLiteError.invalidPath`, `.invalidArgument` (busy timeout out of range),
    ///   `.symlink`, `.notRegularFile` (also for a `-wal`, `-shm` or `-journal` companion that is
    ///   a link or not a regular file), `.fileSystem` (creating the file failed), `.cantOpen`
    ///   (read-only and missing, or SQLite could not open it), `.notADatabase` (the file holds
    ///   something else), `.journalModeRejected`, `.busy`, or any other SQLite error.
    public init(path: String, busyTimeout: Duration = .seconds(5), readOnly: Bool = false, enablesWAL: Bool = true) throws {
        guard !path.isEmpty, path != ":memory:", !path.utf8.contains(0) else {
            throw SQLiteError.invalidPath
        }
        let milliseconds = try Self.milliseconds(busyTimeout)
        if !readOnly { try Self.createIfMissing(path) }
        let status = try Self.inspect(path)
        // SQLite opens these companions without O_NOFOLLOW; a planted link would redirect writes.
        for suffix in ["-wal", "-shm", "-journal"] {
            try Self.inspectCompanion(path + suffix)
        }

        var flags = SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE
        flags |= SQLITE_OPEN_EXRESCODE
        // No SQLITE_OPEN_CREATE: the file exists (created above with 0600); if it vanished in
        // between, failing beats letting SQLite recreate it with its default mode.
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        // A read-only connection to a WAL file would create the -wal and -shm files (and leave
        // them). When no companion exists, no connection has the file open for writing, and
        // SQLite's `immutable` mode reads it without creating or locking anything.
        var name = path
        if readOnly, try Self.companions(of: path).isEmpty {
            name = Self.immutableURI(path)
            flags |= SQLITE_OPEN_URI
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let error = SQLiteError.from(rc, db: db, context: "open \(path)")
            sqlite3_close_v2(db)
            throw error
        }

        self.path = path
        self.isReadOnly = readOnly
        self.fileMode = UInt32(status.st_mode) & 0o7777
        self.fileOwnerID = UInt32(status.st_uid)
        self.handle = db
        self.busyTimeoutMilliseconds = milliseconds
        do {
            try configure(db, enablesWAL: enablesWAL && !readOnly)
        } catch let error as SQLiteError {
            close()
            throw error.with(context: "open \(path)")
        }
    }

    deinit {
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Closes the connection; calling it again does nothing. An open transaction is rolled back.
    /// Cached statements are finalized. Statements still alive keep SQLite's connection memory
    /// until they are released, but every further use of them or of this object throws
    /// `SQLiteError.closed`.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// True until `close()`.
    public var isOpen: Bool { handle != nil }

    /// True while a transaction is open on this connection (SQLite is not in autocommit mode).
    public var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// The rowid of the most recent successful INSERT on this connection (0 if none or closed).
    public var lastInsertRowID: Int64 {
        guard let handle else { return 0 }
        return sqlite3_last_insert_rowid(handle)
    }

    /// The number of rows changed by the most recent INSERT, UPDATE or DELETE (0 if closed).
    public var changes: Int {
        guard let handle else { return 0 }
        return Int(sqlite3_changes64(handle))
    }

    // MARK: Statements

    /// Runs one or more `;`-separated statements, discarding any result rows.
    /// - Throws: `SQLiteError` from the first statement that fails (earlier ones stay applied
    ///   unless a surrounding transaction rolls back); `.invalidArgument` if `sql` contains a
    ///   NUL byte; `.closed`.
    public func execute(_ sql: String) throws {
        let db = try openHandle()
        guard !sql.utf8.contains(0) else {
            throw SQLiteError.invalidArgument("SQL text contains a NUL byte")
        }
        try sql.withCString { start in
            var cursor: UnsafePointer<CChar>? = start
            while let current = cursor, current.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v3(db, current, -1, 0, &statement, &tail)
                guard rc == SQLITE_OK else {
                    throw SQLiteError.from(rc, db: db, context: "prepare \(SQLiteError.quote(sql))")
                }
                cursor = tail
                guard let statement else { continue }  // only whitespace or a comment was left
                statementsCompiled += 1
                defer { sqlite3_finalize(statement) }
                var step: Int32
                repeat { step = sqlite3_step(statement) } while step == SQLITE_ROW
                guard step == SQLITE_DONE else {
                    let text = String(cString: sqlite3_sql(statement))
                    throw SQLiteError.from(step, db: db, context: "step \(SQLiteError.quote(text))")
                }
            }
        }
    }

    /// Compiles exactly one statement (a trailing `;`, whitespace or comment is allowed).
    /// - Throws: `SQLiteError` with SQLite's message (e.g. a syntax error), `.multipleStatements`,
    ///   `.invalidArgument` for a NUL byte, `.closed`.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(database: self, sql: sql)
    }

    /// Runs one statement with `bindings` and returns every result row, all held in memory: bound
    /// the result with `LIMIT` when the table may be large.
    /// - Parameter cached: keep the compiled statement for the next call with the same `sql`
    ///   (for fixed SQL text run often; at most `statementCacheCapacity` are kept). SQLite
    ///   compiles a cached statement again by itself when the schema changed since.
    /// - Throws: as `prepare`, `SQLiteStatement.bind` and `SQLiteStatement.step`.
    public func query(_ sql: String, _ bindings: [SQLiteValue] = [], cached: Bool = false) throws -> [SQLiteRow] {
        try withStatement(sql, cached: cached) { statement in
            try statement.bind(bindings)
            // The names once the first row is there: a step may compile the statement again
            // (after a schema change), and with it its columns.
            var names: [String]?
            var rows: [SQLiteRow] = []
            while try statement.step() {
                let columns = names ?? (0..<statement.columnCount).map { statement.columnName(at: $0) }
                names = columns
                rows.append(SQLiteRow(columnNames: columns, values: statement.values()))
            }
            return rows
        }
    }

    /// Runs one statement with `bindings` to completion and returns `changes`: the number of
    /// rows it inserted, updated or deleted.
    /// - Parameter cached: as for `query`.
    /// - Throws: as `prepare`, `SQLiteStatement.bind` and `SQLiteStatement.step`.
    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLiteValue] = [], cached: Bool = false) throws -> Int {
        try withStatement(sql, cached: cached) { statement in
            try statement.bind(bindings)
            while try statement.step() {}
            return changes
        }
    }

    /// Runs `body` with `sql` compiled: a new statement, or the cached one (compiled and cached
    /// on first use) when `cached`, which is then reset with its bindings cleared whatever
    /// `body` did.
    private func withStatement<T>(_ sql: String, cached: Bool, _ body: (SQLiteStatement) throws -> T) throws -> T {
        guard cached else { return try body(try prepare(sql)) }
        let statement: SQLiteStatement
        if let found = statementCache[sql] {
            _ = try openHandle()
            statement = found
        } else {
            statement = try SQLiteStatement(database: self, sql: sql, cached: true)
            if statementCache.count >= Self.statementCacheCapacity { statementCache.removeAll() }
            statementCache[sql] = statement
        }
        defer {
            statement.reset()
            statement.clearBindings()
        }
        return try body(statement)
    }

    // MARK: Transactions

    /// Runs `body` in a transaction: `BEGIN <kind>`, then `COMMIT` when `body` returns.
    ///
    /// If `body` throws, the transaction is rolled back and `body`'s error is rethrown unchanged.
    /// If `COMMIT` fails (e.g. `SQLITE_FULL`), the transaction is rolled back and the commit
    /// error is thrown. Transactions do not nest: calling this inside a transaction (or after a
    /// manual `BEGIN`) throws `.transactionAlreadyOpen` without touching the open one. `body`
    /// must not close the connection and should not block for long: a writer holds the lock.
    /// - Throws: `body`'s error, `.transactionAlreadyOpen`, `.busy` (the lock did not come within
    ///   the busy timeout), the commit's `SQLiteError`, `.closed`.
    @discardableResult
    public func transaction<T>(_ kind: SQLiteTransactionKind = .immediate, _ body: () throws -> T)
        throws -> T
    {
        let db = try openHandle()
        guard sqlite3_get_autocommit(db) != 0 else { throw SQLiteError.transactionAlreadyOpen }
        try run(kind.beginSQL, cached: true)
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIfOpen()
            throw error
        }
        do {
            try run("COMMIT", cached: true)
        } catch {
            rollbackIfOpen()
            throw error
        }
        return result
    }

    private func rollbackIfOpen() {
        // SQLite may already have rolled back by itself (after SQLITE_FULL, SQLITE_IOERR, ...).
        guard let handle, sqlite3_get_autocommit(handle) == 0 else { return }
        sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
    }

    // MARK: Schema version

    /// `PRAGMA user_version`: the schema version this file's migrations reached.
    /// - Throws: `SQLiteError`, `.closed`.
    public var userVersion: Int32 {
        get throws {
            let rows = try query("PRAGMA user_version")
            guard let value = rows.first?[0].integer, let version = Int32(exactly: value) else {
                throw SQLiteError.result(
                    SQLITE_ERROR, message: "PRAGMA user_version returned no integer",
                    context: "read user_version")
            }
            return version
        }
    }

    /// Sets `PRAGMA user_version`. Inside a transaction it commits or rolls back with it.
    /// - Throws: `SQLiteError` (e.g. `.readOnly`), `.closed`.
    public func setUserVersion(_ version: Int32) throws {
        try execute("PRAGMA user_version = \(version)")
    }

    // MARK: Internals

    /// The live connection handle.
    /// - Throws: `SQLiteError.closed` after `close()`.
    func openHandle() throws -> OpaquePointer {
        guard let handle else { throw SQLiteError.closed.with(context: path) }
        return handle
    }

    /// Switches the file to WAL (`journal_mode=WAL`, verified), for a connection opened with
    /// `enablesWAL: false`; nothing changes when the file is in WAL already.
    /// - Throws: `.journalModeRejected`, `.busy` past the busy timeout, `.readOnly`, `.closed`.
    public func enableWAL() throws {
        _ = try openHandle()
        try retryingBusy {
            let mode = try query("PRAGMA journal_mode=WAL").first?[0].text ?? ""
            guard mode.lowercased() == "wal" else { throw SQLiteError.journalModeRejected(mode) }
        }
    }

    /// SQLite answers SQLITE_BUSY at once, without its busy handler, when another connection
    /// is switching a fresh file to WAL or recovering it; `body` is retried until the busy
    /// timeout, so two processes opening one new file both succeed.
    private func retryingBusy(_ body: () throws -> Void) throws {
        let clock = SystemClock()
        let deadline = clock.now + .milliseconds(Int(busyTimeoutMilliseconds))
        while true {
            do {
                try body()
                return
            } catch let error as SQLiteError where error.isBusy && clock.now < deadline {
                usleep(2_000)
            }
        }
    }

    private func configure(_ db: OpaquePointer, enablesWAL: Bool) throws {
        sqlite3_extended_result_codes(db, 1)
        var rc = sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        guard rc == SQLITE_OK else { throw SQLiteError.from(rc, db: db, context: "set busy timeout") }
        for (option, enable, name) in [
            (SQLITE_DBCONFIG_DEFENSIVE, Int32(1), "defensive mode"),
            (SQLITE_DBCONFIG_TRUSTED_SCHEMA, Int32(0), "untrusted schema"),
        ] {
            var state: Int32 = -1
            rc = csqlite_db_config_flag(db, option, enable, &state)
            guard rc == SQLITE_OK, state == enable else {
                throw SQLiteError.from(rc == SQLITE_OK ? SQLITE_ERROR : rc, db: db, context: "enable \(name)")
            }
        }
        try retryingBusy {
            // Reads the header and schema: a file that is not a database fails here, at open.
            _ = try query("SELECT count(*) FROM sqlite_schema")
        }
        if enablesWAL { try enableWAL() }
        try execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON")
        guard try query("PRAGMA foreign_keys").first?[0].integer == 1 else {
            throw SQLiteError.result(
                SQLITE_ERROR, message: "PRAGMA foreign_keys=ON did not take", context: "enable foreign keys")
        }
    }

    private static func milliseconds(_ duration: Duration) throws -> Int32 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let total = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        guard duration >= .zero, !overflow, !total.overflow, let value = Int32(exactly: total.partialValue)
        else {
            throw SQLiteError.invalidArgument(
                "the busy timeout must be between 0 and \(Int32.max) milliseconds")
        }
        return value
    }

    /// Creates the file with mode 0600 if nothing exists at `path`; an existing entry (file,
    /// symlink, anything) is left for `inspect` to judge.
    private static func createIfMissing(_ path: String) throws {
        do {
            FileDescriptor.close(try PrivateFile.createExclusive(path, flags: O_RDWR))
        } catch where error.operation == "fchmod" {
            throw SQLiteError.fileSystem(error.errno, context: "set mode 0600 on \(path)")
        } catch {
            if error.errno == EEXIST { return }
            throw SQLiteError.fileSystem(error.errno, context: "create \(path)")
        }
    }

    /// The companion files (`-wal`, `-shm`, `-journal`) that exist now.
    private static func companions(of path: String) throws -> [String] {
        try ["-wal", "-shm", "-journal"].filter { suffix in
            var status = stat()
            if lstat(path + suffix, &status) == 0 { return true }
            let number = errno
            if number == ENOENT { return false }
            throw SQLiteError.fileSystem(number, context: "inspect \(path + suffix)")
        }
    }

    /// `file:PATH?immutable=1`, the path percent-encoded except for unreserved characters and
    /// `/`; an absolute path gets an empty authority (`file:///…`).
    static func immutableURI(_ path: String) -> String {
        var encoded = path.hasPrefix("/") ? "file://" : "file:"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded.unicodeScalars.append("%")
                encoded.unicodeScalars.append(Unicode.Scalar(Hex.digit(byte >> 4, uppercase: true)))
                encoded.unicodeScalars.append(Unicode.Scalar(Hex.digit(byte & 0x0F, uppercase: true)))
            }
        }
        return encoded + "?immutable=1"
    }

    /// Refuses a companion file (`-wal`, `-shm`, `-journal`) that exists but is not a regular
    /// file; an absent one is fine.
    private static func inspectCompanion(_ path: String) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            let number = errno
            if number == ENOENT { return }
            throw SQLiteError.fileSystem(number, context: "inspect \(path)")
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFLNK: throw SQLiteError.symlink.with(context: "open \(path)")
        default: throw SQLiteError.notRegularFile.with(context: "open \(path)")
        }
    }

    /// `lstat`s `path`, refusing a symlink or anything but a regular file.
    private static func inspect(_ path: String) throws -> stat {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            let number = errno
            if number == ENOENT {
                throw SQLiteError.result(
                    SQLITE_CANTOPEN, message: "the database file does not exist", context: "open \(path)",
                    systemErrno: number)
            }
            throw SQLiteError.fileSystem(number, context: "inspect \(path)")
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return status
        case S_IFLNK: throw SQLiteError.symlink.with(context: "open \(path)")
        default: throw SQLiteError.notRegularFile.with(context: "open \(path)")
        }
    }
}
