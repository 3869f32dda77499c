import Testing

@testable import SQLiteKit

@Suite struct ValueTests {
    static let roundTripValues: [SQLiteValue] = [
        .integer(Int64.min), .integer(Int64.max), .integer(0), .integer(-1),
        .real(3.141592653589793), .real(-0.5), .real(.infinity), .real(-.infinity),
        .real(Double.leastNonzeroMagnitude), .real(Double.greatestFiniteMagnitude),
        .text(""), .text("plain"), .text("Grüße, 日本語, 🦊👩‍👩‍👧"), .text("e\u{301}"), .text("nul\u{0}inside"),
        .blob([]), .blob([0]), .blob(Array(0...255)),
        .null,
    ]

    @Test(arguments: roundTripValues)
    func valueRoundTripsThroughATable(value: SQLiteValue) throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        try db.execute("CREATE TABLE t(v ANY) STRICT")
        let insert = try db.prepare("INSERT INTO t(v) VALUES (?)")
        try insert.bind(value)
        #expect(try insert.step() == false)

        let select = try db.prepare("SELECT v, typeof(v) FROM t")
        #expect(try select.step())
        #expect(select.value(at: 0) == value)
        #expect(select.isNull(at: 0) == (value == .null))
        switch value {
        case .integer(let number):
            #expect(select.int64(at: 0) == number)
            #expect(select.text(at: 1) == "integer")
        case .real(let number):
            #expect(select.double(at: 0) == number)
            #expect(select.text(at: 1) == "real")
        case .text(let string):
            #expect(select.text(at: 0) == string)
            #expect(select.text(at: 1) == "text")
        case .blob(let bytes):
            #expect(select.blob(at: 0) == bytes)
            #expect(select.text(at: 1) == "blob")
        case .null:
            #expect(select.text(at: 0) == nil)
            #expect(select.blob(at: 0) == nil)
            #expect(select.int64(at: 0) == 0)
            #expect(select.text(at: 1) == "null")
        }
        #expect(try select.step() == false)
        #expect(try db.query("SELECT v FROM t") == [SQLiteRow(columnNames: ["v"], values: [value])])
    }

    @Test func emptyBlobEmptyTextAndNullStayDistinct() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v)")
        try db.run("INSERT INTO t(id, v) VALUES (1, ?), (2, ?), (3, ?)", [.blob([]), .text(""), .null])
        let rows = try db.query("SELECT typeof(v), length(v), v IS NULL FROM t ORDER BY id")
        #expect(rows.map(\.values) == [["blob", 0, 0], ["text", 0, 0], ["null", nil, 1]])
        let select = try db.prepare("SELECT v FROM t ORDER BY id")
        #expect(try select.step())
        #expect(select.blob(at: 0) == [])
        #expect(try select.step())
        #expect(select.text(at: 0) == "")
        #expect(try select.step())
        #expect(select.blob(at: 0) == nil)
        #expect(select.text(at: 0) == nil)
    }

    @Test func invalidUTF8FromTheFileIsRepaired() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        let rows = try db.query("SELECT CAST(x'61ff62' AS TEXT)")
        #expect(rows.first?[0] == .text("a\u{FFFD}b"))
    }

    @Test func literalsAndAccessors() {
        let values: [SQLiteValue] = [7, 2.5, "s", nil]
        #expect(values == [.integer(7), .real(2.5), .text("s"), .null])
        #expect(SQLiteValue.integer(7).integer == 7)
        #expect(SQLiteValue.integer(7).real == 7.0)
        #expect(SQLiteValue.real(2.5).real == 2.5)
        #expect(SQLiteValue.real(2.5).integer == nil)
        #expect(SQLiteValue.text("s").text == "s")
        #expect(SQLiteValue.text("s").blob == nil)
        #expect(SQLiteValue.blob([1]).blob == [1])
        #expect(SQLiteValue.null.isNull)
        #expect(!SQLiteValue.blob([]).isNull)
    }

    @Test func namedParameters() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        let statement = try db.prepare("SELECT :a, @b, $c")
        #expect(statement.parameterCount == 3)
        try statement.bind(1, named: ":a")
        try statement.bind("two", named: "@b")
        try statement.bind(.blob([3]), named: "$c")
        #expect(try statement.step())
        #expect(statement.row().values == [1, "two", .blob([3])])
        #expect(statement.row()[":a"] == 1)
        statement.reset()
        #expect(throws: SQLiteError.unknownParameter(":missing")) { try statement.bind(1, named: ":missing") }
        #expect(throws: SQLiteError.unknownParameter("a")) { try statement.bind(1, named: "a") }
    }

    @Test func bindCountMustMatchExactly() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        let statement = try db.prepare("SELECT ?, ?")
        try statement.bind(1, 2)
        #expect(try statement.step())
        #expect(statement.row().values == [1, 2])
        // bind(_:) resets a statement left on a row and replaces every binding.
        try statement.bind(3, 4)
        #expect(try statement.step())
        #expect(statement.row().values == [3, 4])
        #expect(throws: SQLiteError.parameterCountMismatch(expected: 2, given: 1)) { try statement.bind(1) }
        #expect(throws: SQLiteError.parameterCountMismatch(expected: 2, given: 3)) { try statement.bind(1, 2, 3) }
        #expect(throws: SQLiteError.parameterCountMismatch(expected: 0, given: 1)) {
            try db.query("SELECT 1", [1])
        }
    }

    @Test func bindIndexMustBeInRange() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        let statement = try db.prepare("SELECT ?, ?")
        try statement.bind(1, at: 1)
        try statement.bind(2, at: 2)
        #expect(throws: SQLiteError.range) { try statement.bind(0, at: 0) }
        #expect(throws: SQLiteError.range) { try statement.bind(3, at: 3) }
        #expect(throws: SQLiteError.range) { try statement.bind(3, at: Int.max) }
        statement.clearBindings()
        #expect(try statement.step())
        #expect(statement.row().values == [nil, nil])
    }

    @Test func prepareTakesExactlyOneStatement() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        _ = try db.prepare("SELECT 1;")
        _ = try db.prepare("SELECT 1; -- trailing comment\n  ")
        #expect(throws: SQLiteError.multipleStatements) { try db.prepare("SELECT 1; SELECT 2") }
        #expect(throws: SQLiteError.invalidArgument) { try db.prepare("  -- nothing") }
        #expect(throws: SQLiteError.invalidArgument) { try db.prepare("SELECT 1\u{0}; DROP TABLE x") }
        #expect(throws: SQLiteError.invalidArgument) { try db.execute("SELECT 1\u{0}") }
    }

    @Test func runReturnsChangesAndRowID() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)")
        #expect(try db.run("INSERT INTO t(v) VALUES (?), (?), (?)", [1, 2, 3]) == 3)
        #expect(db.lastInsertRowID == 3)
        #expect(try db.run("UPDATE t SET v = v + 1 WHERE v >= ?", [2]) == 2)
        #expect(db.changes == 2)
        #expect(try db.run("DELETE FROM t WHERE v = ?", [99]) == 0)
        #expect(try db.run("INSERT INTO t(v) VALUES (10) RETURNING id") == 1)
        #expect(db.lastInsertRowID == 4)
    }

    @Test func rowsCarryColumnNames() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        let statement = try db.prepare("SELECT 1 AS one, 'x' AS two")
        #expect(statement.columnCount == 2)
        #expect(statement.columnName(at: 0) == "one")
        #expect(statement.columnName(at: 1) == "two")
        let row = try #require(try db.query("SELECT 1 AS one, 'x' AS two").first)
        #expect(row.columnNames == ["one", "two"])
        #expect(row["two"] == "x")
        #expect(row["three"] == nil)
        #expect(row[0] == 1)
    }

    @Test func finishedStatementRunsAgainWithSameBindings() throws {
        let dir = try TemporaryDirectory()
        let db = try SQLiteDatabase(path: dir.file("v.db"))
        try db.execute("CREATE TABLE t(v)")
        let insert = try db.prepare("INSERT INTO t VALUES (?)")
        try insert.bind(5)
        #expect(try insert.step() == false)
        #expect(try insert.step() == false)
        #expect(try db.query("SELECT v FROM t").map(\.values) == [[5], [5]])
    }

    @Test func readingAColumnWithoutARowTraps() async throws {
        let dir = try TemporaryDirectory()
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [path = dir.file("v.db") as String] in
            let db = try SQLiteDatabase(path: path)
            let statement = try db.prepare("SELECT 1")
            _ = statement.int64(at: 0)
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("no current row"))
    }

    @Test func readingAColumnPastTheEndTraps() async throws {
        let dir = try TemporaryDirectory()
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [path = dir.file("v.db") as String] in
            let db = try SQLiteDatabase(path: path)
            let statement = try db.prepare("SELECT 1")
            _ = try statement.step()
            _ = statement.int64(at: 1)
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("column 1 is out of range"))
    }
}
