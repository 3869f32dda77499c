import CSQLite

/// One compiled SQL statement on a `SQLiteDatabase`; finalized when released.
///
/// Like its database it has one owner and is not `Sendable`. It keeps its database object alive
/// (except the statements the database caches for itself, which it owns). Typical use: `bind`,
/// then `step()` until it returns false, reading columns while it returns true. A statement left
/// on a row holds a read snapshot (which stops WAL checkpoints from finishing) until `reset()`,
/// the next `bind(_:)`, or its release.
public final class SQLiteStatement {
    /// The database, kept alive by every statement but those in the database's own cache.
    private let owner: SQLiteDatabase?
    private unowned let database: SQLiteDatabase
    private let handle: OpaquePointer
    private var hasRow = false

    /// The SQL text the statement was compiled from.
    public let sql: String

    /// Compiles `sql`; `cached` makes a statement for the database's cache, which does not keep
    /// the database alive (the database owns it) and tells SQLite it will be reused.
    init(database: SQLiteDatabase, sql: String, cached: Bool = false) throws {
        let db = try database.openHandle()
        guard !sql.utf8.contains(0) else {
            throw SQLiteError.invalidArgument("SQL text contains a NUL byte")
        }
        var statement: OpaquePointer?
        let extra: Bool = try sql.withCString { start in
            var tail: UnsafePointer<CChar>?
            let flags = cached ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
            let rc = sqlite3_prepare_v3(db, start, -1, flags, &statement, &tail)
            guard rc == SQLITE_OK else {
                throw SQLiteError.from(rc, db: db, context: "prepare \(SQLiteError.quote(sql))")
            }
            guard let tail, tail.pointee != 0 else { return false }
            // Compile the rest to tell a second statement from a trailing comment or whitespace.
            var next: OpaquePointer?
            let rest = sqlite3_prepare_v3(db, tail, -1, 0, &next, nil)
            defer { sqlite3_finalize(next) }
            return rest != SQLITE_OK || next != nil
        }
        guard let statement else {
            throw SQLiteError.invalidArgument("the SQL text holds no statement: \(SQLiteError.quote(sql))")
        }
        guard !extra else {
            sqlite3_finalize(statement)
            throw SQLiteError.multipleStatements.with(context: "prepare \(SQLiteError.quote(sql))")
        }
        database.statementsCompiled += 1
        self.owner = cached ? nil : database
        self.database = database
        self.handle = statement
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    private var context: String { SQLiteError.quote(sql) }

    // MARK: Binding

    /// The number of parameters (`?`, `?NNN`, `:name`, `@name`, `$name`) in the statement.
    public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// Resets the statement, clears old bindings and binds `values` to parameters 1, 2, ...
    /// - Throws: `.parameterCountMismatch` unless `values.count == parameterCount`;
    ///   `.tooBig` for a value past SQLite's length limit; `.closed`.
    public func bind(_ values: SQLiteValue...) throws {
        try bind(values)
    }

    /// Resets the statement, clears old bindings and binds `values` to parameters 1, 2, ...
    /// - Throws: `.parameterCountMismatch` unless `values.count == parameterCount`;
    ///   `.tooBig` for a value past SQLite's length limit; `.closed`.
    public func bind(_ values: [SQLiteValue]) throws {
        _ = try database.openHandle()
        guard values.count == parameterCount else {
            throw SQLiteError.parameterCountMismatch(expected: parameterCount, given: values.count)
                .with(context: "bind \(context)")
        }
        reset()
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            try bind(value, at: offset + 1)
        }
    }

    /// Binds `value` to the parameter at `index` (1-based), keeping other bindings.
    /// The statement must not be mid-run: `reset()` first if `step()` returned true.
    /// - Throws: `.range` (SQLite's) for an index outside 1...parameterCount, `.misuse` if the
    ///   statement is mid-run, `.tooBig`, `.closed`.
    public func bind(_ value: SQLiteValue, at index: Int) throws {
        let db = try database.openHandle()
        guard let position = Int32(exactly: index) else {
            throw SQLiteError.from(SQLITE_RANGE, db: nil, context: "bind parameter \(index) of \(context)")
        }
        let rc: Int32
        switch value {
        case .integer(let number):
            rc = sqlite3_bind_int64(handle, position, number)
        case .real(let number):
            rc = sqlite3_bind_double(handle, position, number)
        case .text(let string):
            var string = string
            rc = string.withUTF8 { bytes in
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_text(handle, position, "", 0, csqlite_transient())
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text64(
                        handle, position, $0, UInt64(bytes.count), csqlite_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            if bytes.isEmpty {
                rc = sqlite3_bind_zeroblob(handle, position, 0)
            } else {
                rc = bytes.withUnsafeBytes {
                    sqlite3_bind_blob64(handle, position, $0.baseAddress, UInt64($0.count), csqlite_transient())
                }
            }
        case .null:
            rc = sqlite3_bind_null(handle, position)
        }
        guard rc == SQLITE_OK else {
            throw SQLiteError.from(rc, db: db, context: "bind parameter \(index) of \(context)")
        }
    }

    /// Binds `value` to the named parameter `name`, written with its prefix as in the SQL
    /// (`":id"`, `"@id"`, `"$id"`).
    /// - Throws: `.unknownParameter` if the statement has no such parameter; as `bind(_:at:)`.
    public func bind(_ value: SQLiteValue, named name: String) throws {
        _ = try database.openHandle()
        let index = name.utf8.contains(0) ? 0 : sqlite3_bind_parameter_index(handle, name)
        guard index > 0 else {
            throw SQLiteError.unknownParameter(name).with(context: "bind \(context)")
        }
        try bind(value, at: Int(index))
    }

    /// Sets every parameter back to NULL.
    public func clearBindings() {
        sqlite3_clear_bindings(handle)
    }

    // MARK: Stepping

    /// Runs the statement to its next result row.
    /// - Returns: true when a row is available to read, false when the statement is done (it is
    ///   then reset, so the next `step()` runs it again with the same bindings).
    /// - Throws: the `SQLiteError` SQLite reports (`.busy`, `.constraint`, `.full`, ...); the
    ///   statement is then reset. `.closed` if the database was closed.
    public func step() throws -> Bool {
        let db = try database.openHandle()
        hasRow = false
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW:
            hasRow = true
            return true
        case SQLITE_DONE:
            sqlite3_reset(handle)
            return false
        default:
            let error = SQLiteError.from(rc, db: db, context: "step \(context)")
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Rewinds the statement so the next `step()` starts over; bindings are kept. Releases the
    /// read snapshot a statement left on a row holds.
    public func reset() {
        hasRow = false
        sqlite3_reset(handle)
    }

    // MARK: Columns

    /// The number of result columns (0 for a statement that returns no rows).
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// The name of result column `index` (0-based, below `columnCount`).
    public func columnName(at index: Int) -> String {
        precondition(index >= 0 && index < columnCount, "column \(index) is out of range for \(context)")
        return sqlite3_column_name(handle, Int32(index)).map { String(cString: $0) } ?? ""
    }

    /// True if column `index` of the current row is NULL.
    public func isNull(at index: Int) -> Bool {
        sqlite3_column_type(handle, column(index)) == SQLITE_NULL
    }

    /// Column `index` of the current row as an integer, converted by SQLite's rules (NULL is 0;
    /// use `isNull(at:)` or `value(at:)` to tell them apart).
    public func int64(at index: Int) -> Int64 {
        sqlite3_column_int64(handle, column(index))
    }

    /// Column `index` of the current row as a Double, converted by SQLite's rules (NULL is 0).
    public func double(at index: Int) -> Double {
        sqlite3_column_double(handle, column(index))
    }

    /// Column `index` of the current row as text (a number is converted to its text form), or
    /// nil if it is NULL. Invalid UTF-8 from the file is repaired with U+FFFD.
    public func text(at index: Int) -> String? {
        let position = column(index)
        guard sqlite3_column_type(handle, position) != SQLITE_NULL else { return nil }
        guard let bytes = sqlite3_column_text(handle, position) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, position))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Column `index` of the current row as bytes, or nil if it is NULL. An empty blob is `[]`.
    public func blob(at index: Int) -> [UInt8]? {
        let position = column(index)
        guard sqlite3_column_type(handle, position) != SQLITE_NULL else { return nil }
        guard let bytes = sqlite3_column_blob(handle, position) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, position))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// Column `index` of the current row in the storage class SQLite holds it in.
    public func value(at index: Int) -> SQLiteValue {
        let position = column(index)
        switch sqlite3_column_type(handle, position) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, position))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, position))
        case SQLITE_TEXT: return .text(text(at: index) ?? "")
        case SQLITE_BLOB: return .blob(blob(at: index) ?? [])
        default: return .null
        }
    }

    /// The current row, copied out.
    public func row() -> SQLiteRow {
        SQLiteRow(columnNames: (0..<columnCount).map { columnName(at: $0) }, values: values())
    }

    /// The current row's values in column order.
    func values() -> [SQLiteValue] {
        (0..<columnCount).map { value(at: $0) }
    }

    /// Checks that a row is current and `index` is a valid column; reading otherwise is a
    /// programming error (SQLite leaves it undefined), so it traps with a clear message.
    private func column(_ index: Int) -> Int32 {
        precondition(hasRow, "no current row: read columns only after step() returned true (\(context))")
        precondition(index >= 0 && index < columnCount, "column \(index) is out of range for \(context)")
        return Int32(index)
    }
}
