import CSQLite
import CodedError
import Glibc

/// An error from SQLite or from SQLiteKit's own checks around it.
///
/// Equality compares the kind of error only (the SQLite primary result code, or SQLiteKit's own
/// kind with its values), never the message or context, so `error == .busy` and
/// `error == .schemaTooNew(found: 3, supported: 2)` read naturally. Use the predicates
/// (`isBusy`, `isFull`, ...) to classify an error. Messages never contain bound values: SQL
/// text is quoted in `context`, so secrets belong in bindings, never inline in SQL.
public struct SQLiteError: CodedError, Hashable {
    public let code: Code
    /// The SQLite primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, ...), or nil for an error
    /// SQLiteKit raised itself before or instead of calling SQLite.
    public let resultCode: Int32?
    /// The SQLite extended result code (`SQLITE_CONSTRAINT_UNIQUE`, `SQLITE_IOERR_WRITE`, ...),
    /// or nil when SQLite did not report one.
    public let extendedResultCode: Int32?
    /// The human message: SQLite's own (`sqlite3_errmsg`, else `sqlite3_errstr`) or SQLiteKit's.
    public let message: String
    /// What was being done, e.g. `step "INSERT INTO peers ..."` or `open /var/lib/x.db`.
    public let context: String?
    /// The operating system `errno` behind the failure when SQLite or SQLiteKit recorded one.
    public let systemErrno: Int32?

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable {
        case result(Int32)
        case invalidPath
        case symlink
        case notRegularFile
        case fileSystem
        case invalidArgument
        case closed
        case transactionAlreadyOpen
        case parameterCountMismatch(expected: Int, given: Int)
        case unknownParameter(String)
        case multipleStatements
        case journalModeRejected(String)
        case invalidMigrations
        case migrationEndedTransaction(version: Int32)
        case unknownSchemaVersion(found: Int32)
        case schemaTooNew(found: Int32, supported: Int32)
    }

    private init(
        code: Code, resultCode: Int32? = nil, extendedResultCode: Int32? = nil, message: String,
        context: String? = nil, systemErrno: Int32? = nil
    ) {
        self.code = code
        self.resultCode = resultCode
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.context = context
        self.systemErrno = systemErrno
    }

    private init(primary: Int32) {
        self.init(
            code: .result(primary), resultCode: primary, message: String(cString: sqlite3_errstr(primary)))
    }

    /// `context: message (SQLite result code N)`, suitable for a log line or a CLI error.
    public var description: String {
        var text = context.map { "\($0): \(message)" } ?? message
        if let extendedResultCode {
            text += " (SQLite result code \(extendedResultCode))"
        } else if let resultCode {
            text += " (SQLite result code \(resultCode))"
        }
        if let systemErrno, systemErrno != 0 {
            text += " [errno \(systemErrno): \(String(cString: strerror(systemErrno)))]"
        }
        return text
    }

    // MARK: SQLite result codes

    /// `SQLITE_ERROR`: generic SQL error, e.g. a syntax error or a missing table.
    public static let sqlError = SQLiteError(primary: SQLITE_ERROR)
    /// `SQLITE_BUSY`: another connection holds the lock for longer than the busy timeout.
    public static let busy = SQLiteError(primary: SQLITE_BUSY)
    /// `SQLITE_LOCKED`: a conflict within this same connection (e.g. dropping a table being read).
    public static let locked = SQLiteError(primary: SQLITE_LOCKED)
    /// `SQLITE_NOMEM`: SQLite could not allocate memory.
    public static let noMemory = SQLiteError(primary: SQLITE_NOMEM)
    /// `SQLITE_READONLY`: a write on a read-only connection or file.
    public static let readOnly = SQLiteError(primary: SQLITE_READONLY)
    /// `SQLITE_INTERRUPT`: the operation was interrupted.
    public static let interrupted = SQLiteError(primary: SQLITE_INTERRUPT)
    /// `SQLITE_IOERR`: the operating system reported an I/O error.
    public static let ioError = SQLiteError(primary: SQLITE_IOERR)
    /// `SQLITE_CORRUPT`: the database file is malformed.
    public static let corrupt = SQLiteError(primary: SQLITE_CORRUPT)
    /// `SQLITE_FULL`: the disk (or file-size limit) is full; the write did not happen.
    public static let full = SQLiteError(primary: SQLITE_FULL)
    /// `SQLITE_CANTOPEN`: the file could not be opened (missing, a directory, no permission).
    public static let cantOpen = SQLiteError(primary: SQLITE_CANTOPEN)
    /// `SQLITE_CONSTRAINT`: a UNIQUE, NOT NULL, CHECK, PRIMARY KEY or FOREIGN KEY constraint failed.
    public static let constraint = SQLiteError(primary: SQLITE_CONSTRAINT)
    /// `SQLITE_MISMATCH`: a value of the wrong type, e.g. a non-integer rowid or STRICT column.
    public static let mismatch = SQLiteError(primary: SQLITE_MISMATCH)
    /// `SQLITE_MISUSE`: the SQLite API was called out of order.
    public static let misuse = SQLiteError(primary: SQLITE_MISUSE)
    /// `SQLITE_AUTH`: an authorizer denied the operation.
    public static let authorization = SQLiteError(primary: SQLITE_AUTH)
    /// `SQLITE_RANGE`: a parameter index out of range.
    public static let range = SQLiteError(primary: SQLITE_RANGE)
    /// `SQLITE_TOOBIG`: a string or blob exceeds SQLite's length limit.
    public static let tooBig = SQLiteError(primary: SQLITE_TOOBIG)
    /// `SQLITE_NOTADB`: the file is not an SQLite database.
    public static let notADatabase = SQLiteError(primary: SQLITE_NOTADB)

    // MARK: SQLiteKit's own errors

    /// The path is empty, contains a NUL byte, or names SQLite's in-memory database.
    public static let invalidPath = SQLiteError(code: .invalidPath, message: "the database path must be a non-empty file path")
    /// The database path is a symbolic link; SQLiteKit never follows one.
    public static let symlink = SQLiteError(code: .symlink, resultCode: SQLITE_CANTOPEN, message: "the database path is a symbolic link")
    /// The database path exists but is not a regular file (a directory, FIFO, socket, device).
    public static let notRegularFile = SQLiteError(code: .notRegularFile, resultCode: SQLITE_CANTOPEN, message: "the database path is not a regular file")
    /// Creating or inspecting the database file failed; `systemErrno` says why.
    public static let fileSystem = SQLiteError(code: .fileSystem, message: "the database file could not be created or inspected")
    /// An argument is outside its documented range.
    public static let invalidArgument = SQLiteError(code: .invalidArgument, message: "an argument is out of range")
    /// The database was used after `close()`.
    public static let closed = SQLiteError(code: .closed, message: "the database connection is closed")
    /// `transaction` was called while a transaction is already open on the connection.
    public static let transactionAlreadyOpen = SQLiteError(code: .transactionAlreadyOpen, message: "a transaction is already open on this connection; transactions do not nest")
    /// `prepare` was given more than one statement; use `execute` for a script.
    public static let multipleStatements = SQLiteError(code: .multipleStatements, message: "more than one SQL statement was given; prepare takes exactly one (use execute for several)")
    /// The migration list is not strictly ascending from version 1 or above.
    public static let invalidMigrations = SQLiteError(code: .invalidMigrations, message: "migration versions must be positive and strictly ascending")

    /// A statement was given `given` values but has `expected` parameters.
    public static func parameterCountMismatch(expected: Int, given: Int) -> SQLiteError {
        SQLiteError(
            code: .parameterCountMismatch(expected: expected, given: given), resultCode: SQLITE_RANGE,
            message: "the statement has \(expected) parameter(s) but \(given) value(s) were given")
    }

    /// A named parameter (`:name`, `@name`, `$name`) does not occur in the statement.
    public static func unknownParameter(_ name: String) -> SQLiteError {
        SQLiteError(
            code: .unknownParameter(name), resultCode: SQLITE_RANGE,
            message: "the statement has no parameter named \(name)")
    }

    /// `PRAGMA journal_mode=WAL` did not take; `mode` is the journal mode SQLite kept.
    public static func journalModeRejected(_ mode: String) -> SQLiteError {
        SQLiteError(
            code: .journalModeRejected(mode),
            message: "SQLite refused write-ahead logging and kept journal mode \"\(mode)\"")
    }

    /// A migration's body committed or rolled back the transaction it runs in.
    public static func migrationEndedTransaction(version: Int32) -> SQLiteError {
        SQLiteError(
            code: .migrationEndedTransaction(version: version),
            message: "migration \(version) ended its own transaction; migrations must not use BEGIN, COMMIT or ROLLBACK")
    }

    /// The file's `user_version` is negative or not one of the known migration versions, so it
    /// was not written by this schema's migrations.
    public static func unknownSchemaVersion(found: Int32) -> SQLiteError {
        SQLiteError(
            code: .unknownSchemaVersion(found: found),
            message: "the database has schema version \(found), which no known migration produces")
    }

    /// The file was written by a newer program: its schema version `found` is above the highest
    /// version `supported` by this one. Nothing was written.
    public static func schemaTooNew(found: Int32, supported: Int32) -> SQLiteError {
        SQLiteError(
            code: .schemaTooNew(found: found, supported: supported),
            message: "the database has schema version \(found) but this program supports up to \(supported); it was written by a newer version, upgrade this program")
    }

    // MARK: Predicates

    /// True for `SQLITE_BUSY` in all its extended forms: another connection held the lock past
    /// the busy timeout.
    public var isBusy: Bool { code == .result(SQLITE_BUSY) }
    /// True when a constraint (UNIQUE, NOT NULL, CHECK, PRIMARY KEY, FOREIGN KEY) failed.
    public var isConstraintViolation: Bool { code == .result(SQLITE_CONSTRAINT) }
    /// True when the file is malformed or not a database at all (`SQLITE_CORRUPT`, `SQLITE_NOTADB`).
    public var isCorrupt: Bool { code == .result(SQLITE_CORRUPT) || code == .result(SQLITE_NOTADB) }
    /// True when the file is not an SQLite database (`SQLITE_NOTADB`).
    public var isNotADatabase: Bool { code == .result(SQLITE_NOTADB) }
    /// True when a write was refused because the connection or file is read-only.
    public var isReadOnly: Bool { code == .result(SQLITE_READONLY) }
    /// True when the disk is full: `SQLITE_FULL`, or an I/O error whose errno is `ENOSPC` or `EDQUOT`.
    public var isFull: Bool {
        code == .result(SQLITE_FULL) || systemErrno == ENOSPC || systemErrno == EDQUOT
    }
    /// True when the file's schema is newer than the migrations this program knows.
    public var isSchemaTooNew: Bool {
        if case .schemaTooNew = code { return true }
        return false
    }
    /// For a `schemaTooNew` error, the version found in the file and the highest supported one.
    public var schemaVersions: (found: Int32, supported: Int32)? {
        if case .schemaTooNew(let found, let supported) = code { return (found, supported) }
        return nil
    }

    // MARK: Construction from SQLite

    /// Builds the error for result code `rc` returned by a call on connection `db`.
    static func from(_ rc: Int32, db: OpaquePointer?, context: String) -> SQLiteError {
        let primary = rc & 0xFF
        var message = String(cString: sqlite3_errstr(rc))
        var errno: Int32? = nil
        if let db {
            if sqlite3_extended_errcode(db) == rc, let text = sqlite3_errmsg(db) {
                message = String(cString: text)
            }
            let system = sqlite3_system_errno(db)
            if system != 0 { errno = system }
        }
        let cantOpenSymlink = SQLITE_CANTOPEN | (6 << 8)  // SQLITE_CANTOPEN_SYMLINK, a macro Swift cannot import
        let code: Code = rc == cantOpenSymlink ? .symlink : .result(primary)
        return SQLiteError(
            code: code, resultCode: primary, extendedResultCode: rc, message: message, context: context,
            systemErrno: errno)
    }

    /// Builds an error of SQLite primary code `primary` that SQLiteKit detected itself.
    static func result(_ primary: Int32, message: String, context: String, systemErrno: Int32? = nil)
        -> SQLiteError
    {
        SQLiteError(
            code: .result(primary), resultCode: primary, message: message, context: context,
            systemErrno: systemErrno)
    }

    /// Builds a file-system error for the `errno` value `number`.
    static func fileSystem(_ number: Int32, context: String) -> SQLiteError {
        SQLiteError(
            code: .fileSystem, message: String(cString: strerror(number)), context: context,
            systemErrno: number)
    }

    /// Returns this error with a context attached.
    func with(context: String) -> SQLiteError {
        SQLiteError(
            code: code, resultCode: resultCode, extendedResultCode: extendedResultCode, message: message,
            context: context, systemErrno: systemErrno)
    }

    /// `SQLiteError.invalidArgument` with a specific message.
    static func invalidArgument(_ message: String) -> SQLiteError {
        SQLiteError(code: .invalidArgument, message: message)
    }

    /// Quotes SQL for a context string, shortened to 160 characters.
    static func quote(_ sql: String) -> String {
        let flat = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return flat.count > 160 ? "\"\(flat.prefix(160))...\"" : "\"\(flat)\""
    }
}
