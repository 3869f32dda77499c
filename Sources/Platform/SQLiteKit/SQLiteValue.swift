/// One SQLite value, in one of SQLite's five storage classes.
///
/// An empty blob (`.blob([])`) and `.null` are different values and round-trip as such.
/// Literals work: `1` is `.integer`, `1.5` is `.real`, `"x"` is `.text`, `nil` is `.null`.
public enum SQLiteValue: Sendable, Hashable {
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A 64-bit IEEE floating-point number. SQLite stores NaN as NULL.
    case real(Double)
    /// UTF-8 text. Text read from a file that holds invalid UTF-8 is repaired with U+FFFD.
    case text(String)
    /// Bytes; `[]` is an empty blob, not NULL.
    case blob([UInt8])
    /// SQL NULL.
    case null

    /// The integer, if this is `.integer`.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The number, if this is `.real` or `.integer` (an integer converts to the nearest Double).
    public var real: Double? {
        switch self {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    /// The string, if this is `.text`.
    public var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The bytes, if this is `.blob`.
    public var blob: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }

    /// True if this is `.null`.
    public var isNull: Bool { self == .null }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    /// An `.integer` literal.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    /// A `.real` literal.
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    /// A `.text` literal.
    public init(stringLiteral value: String) { self = .text(value) }
}

extension SQLiteValue: ExpressibleByNilLiteral {
    /// The `.null` literal.
    public init(nilLiteral: ()) { self = .null }
}

/// One result row, copied out of SQLite: it stays valid after its statement moves on.
public struct SQLiteRow: Sendable, Hashable {
    /// The column names in result order, as SQLite reports them (`AS` aliases included).
    public let columnNames: [String]
    /// The values in result order, each in the storage class SQLite returned.
    public let values: [SQLiteValue]

    /// Makes a row from names and values of equal count.
    public init(columnNames: [String], values: [SQLiteValue]) {
        precondition(columnNames.count == values.count, "SQLiteRow needs one name per value")
        self.columnNames = columnNames
        self.values = values
    }

    /// The value at `index` (0-based); the index must be below `values.count`.
    public subscript(index: Int) -> SQLiteValue { values[index] }

    /// The value of the first column named `name` (exact, case-sensitive match), or nil if the
    /// row has no such column.
    public subscript(name: String) -> SQLiteValue? {
        columnNames.firstIndex(of: name).map { values[$0] }
    }
}
