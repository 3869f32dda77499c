import Foundation
import Glibc
import Testing

@testable import SQLiteKit

/// A unique directory under the system temp directory, removed with everything in it on release.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        var template = Array("\(NSTemporaryDirectory())sqlitekit-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        try #require(made, "mkdtemp failed: errno \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { "\(path)/\(name)" }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The permission bits of `path` (not following a symlink), or nil if it does not exist.
func permissionBits(_ path: String) -> UInt32? {
    var status = stat()
    guard lstat(path, &status) == 0 else { return nil }
    return UInt32(status.st_mode) & 0o7777
}

/// The bytes of the file at `path`, or nil if it cannot be read.
func fileBytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

/// True if something exists at `path` (a dangling symlink counts).
func exists(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

/// Writes `bytes` to a new file at `path` with `mode`.
func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
    try #require(fd >= 0, "cannot create \(path): errno \(errno)")
    defer { close(fd) }
    try #require(fchmod(fd, mode) == 0)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    try #require(written == bytes.count)
}

/// The number of rows in `table`.
func count(_ db: SQLiteDatabase, _ table: String) throws -> Int64 {
    try #require(try db.query("SELECT count(*) FROM \(table)").first?[0].integer)
}

/// The single text result of `sql`.
func scalarText(_ db: SQLiteDatabase, _ sql: String) throws -> String? {
    try db.query(sql).first?[0].text
}

/// The migrations of a small test schema: a `peer` table, then an index, then a column.
let testMigrations: [SQLiteMigration] = [
    SQLiteMigration(
        version: 1,
        sql: """
            CREATE TABLE peer (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                writer TEXT NOT NULL DEFAULT '',
                payload BLOB
            ) STRICT;
            """),
    SQLiteMigration(version: 2, sql: "CREATE INDEX peer_writer ON peer(writer);"),
    SQLiteMigration(version: 3) { db in
        try db.execute("ALTER TABLE peer ADD COLUMN seen INTEGER")
    },
]

/// SQLite extended result codes, which Swift cannot import (they are shifted macros).
enum Extended {
    static let constraintNotNull: Int32 = 19 | (5 << 8)
    static let constraintUnique: Int32 = 19 | (8 << 8)
    static let constraintForeignKey: Int32 = 19 | (3 << 8)
    static let readOnlyDatabase: Int32 = 8
}
