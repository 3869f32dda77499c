import Foundation
import Glibc
import Synchronization
import Testing

@testable import SQLiteKit

/// A thread that opens `path`, inserts one row into `t` inside an IMMEDIATE transaction, signals
/// `locked`, holds the write lock for `duration`, then commits and signals `finished`.
private final class LockHolder: Sendable {
    let locked = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let failure = Mutex<String?>(nil)

    init(path: String, holding duration: Duration) {
        let thread = Thread { [self] in
            defer { finished.signal() }
            do {
                let db = try SQLiteDatabase(path: path)
                try db.transaction(.immediate) {
                    try db.run("INSERT INTO t VALUES ('holder')")
                    locked.signal()
                    Thread.sleep(forTimeInterval: Double(duration.components.seconds)
                        + Double(duration.components.attoseconds) / 1e18)
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
                locked.signal()
            }
        }
        thread.start()
    }
}

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct ConcurrencyTests {
    @Test func writerWaitsForALockHeldShorterThanItsBusyTimeout() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("busy.db")
        try SQLiteDatabase(path: path).execute("CREATE TABLE t(x)")
        let db = try SQLiteDatabase(path: path, busyTimeout: .seconds(2))
        let holder = LockHolder(path: path, holding: .milliseconds(300))
        holder.locked.wait()
        let start = ContinuousClock.now
        try db.run("INSERT INTO t VALUES ('waiter')")
        let waited = ContinuousClock.now - start
        holder.finished.wait()
        #expect(holder.failure.withLock { $0 } == nil)
        #expect(waited >= .milliseconds(100), "the insert should have waited for the holder")
        #expect(waited < .seconds(2))
        #expect(try db.query("SELECT x FROM t ORDER BY rowid").map(\.values) == [["holder"], ["waiter"]])
    }

    @Test func writerFailsWithBusyWhenTheLockOutlastsItsTimeout() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("busy.db")
        try SQLiteDatabase(path: path).execute("CREATE TABLE t(x)")
        let db = try SQLiteDatabase(path: path, busyTimeout: .milliseconds(50))
        let holder = LockHolder(path: path, holding: .milliseconds(300))
        holder.locked.wait()
        // In WAL mode a reader is not blocked by the writer; it sees the last commit.
        #expect(try count(db, "t") == 0)
        let start = ContinuousClock.now
        let error = #expect(throws: SQLiteError.busy) {
            try db.transaction { try db.run("INSERT INTO t VALUES ('waiter')") }
        }
        let waited = ContinuousClock.now - start
        holder.finished.wait()
        #expect(holder.failure.withLock { $0 } == nil)
        #expect(error?.isBusy == true)
        #expect(error?.message == "database is locked")
        #expect(waited >= .milliseconds(45))
        #expect(waited < .milliseconds(280))
        #expect(!db.isInTransaction)
        #expect(try db.query("SELECT x FROM t").map(\.values) == [["holder"]])
    }

    @Test func twoProcessesWritingConcurrentlyLoseNothing() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("shared.db")  // absent: both processes race to create and migrate it
        async let first: Void = insertRowsInChildProcess(path: path, writer: "A", peer: "B")
        async let second: Void = insertRowsInChildProcess(path: path, writer: "B", peer: "A")
        _ = await (first, second)

        let db = try SQLiteDatabase(path: path)
        #expect(try db.userVersion == 3)
        #expect(try count(db, "peer") == 400)
        let perWriter = try db.query("SELECT writer, count(*) FROM peer GROUP BY writer ORDER BY writer")
        #expect(perWriter.map(\.values) == [["A", 200], ["B", 200]])
        #expect(try scalarText(db, "PRAGMA integrity_check") == "ok")
        #expect(db.fileMode == 0o600)
    }

    /// Runs a child process that waits until its peer is also ready, then opens and migrates the
    /// database at `path` and inserts 200 rows, each in its own IMMEDIATE transaction.
    private func insertRowsInChildProcess(path: String, writer: String, peer: String) async {
        await #expect(processExitsWith: .success) {
            [path = path as String, writer = writer as String, peer = peer as String] in
            try writeFile("\(path).ready-\(writer)", [])
            let deadline = ContinuousClock.now + .seconds(20)
            while !exists("\(path).ready-\(peer)") {
                try #require(ContinuousClock.now < deadline, "the peer process never became ready")
                usleep(1000)
            }
            let db = try SQLiteDatabase(path: path, busyTimeout: .seconds(10))
            try db.migrate(testMigrations)
            for index in 0..<200 {
                try db.transaction {
                    try db.run(
                        "INSERT INTO peer(name, writer) VALUES (?, ?)", [.text("\(writer)-\(index)"), .text(writer)])
                }
            }
        }
    }

    @Test func sigkillMidTransactionKeepsExactlyTheCommittedRows() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("killed.db")
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String] in
            let db = try SQLiteDatabase(path: path)
            try db.migrate(testMigrations)
            for index in 0..<50 {
                try db.transaction { try db.run("INSERT INTO peer(name) VALUES (?)", [.text("committed-\(index)")]) }
            }
            try db.transaction {
                // About 3 MB: more than the 2 MB page cache, so uncommitted pages spill into the WAL.
                for index in 0..<400 {
                    try db.run(
                        "INSERT INTO peer(name, payload) VALUES (?, randomblob(8000))", [.text("uncommitted-\(index)")])
                }
                kill(getpid(), SIGKILL)
            }
        }
        let walSize = fileBytes(path + "-wal")?.count ?? 0
        #expect(walSize > 2_000_000, "the killed transaction should have left frames in the WAL")

        let db = try SQLiteDatabase(path: path)
        #expect(try scalarText(db, "PRAGMA integrity_check") == "ok")
        #expect(try count(db, "peer") == 50)
        #expect(try db.query("SELECT count(*) FROM peer WHERE name LIKE 'committed-%'").first?[0] == 50)
        try db.run("INSERT INTO peer(name) VALUES ('after recovery')")
        #expect(try count(db, "peer") == 51)
    }
}
