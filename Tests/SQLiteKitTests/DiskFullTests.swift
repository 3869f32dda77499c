import Glibc
import Testing

@testable import SQLiteKit

/// `unshare(2)`, which Glibc's Swift module does not export (it needs _GNU_SOURCE).
private func unshareMountNamespace() -> Bool {
    typealias Unshare = @convention(c) (Int32) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unshare") else { return false }
    let cloneNewNS: Int32 = 0x0002_0000  // CLONE_NEWNS
    return unsafeBitCast(symbol, to: Unshare.self)(cloneNewNS) == 0
}

@Suite struct DiskFullTests {
    /// Needs root (CAP_SYS_ADMIN) to mount a tmpfs. The mount lives in the child process's own
    /// mount namespace, so it disappears with the child whatever happens.
    @Test func fullDiskIsATypedErrorAndTheDatabaseSurvives() async throws {
        let dir = try TemporaryDirectory()
        await #expect(processExitsWith: .success) { [mountPoint = dir.path as String] in
            try #require(unshareMountNamespace(), "unshare(CLONE_NEWNS) failed: errno \(errno)")
            try #require(mount("none", "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0, "errno \(errno)")
            try #require(mount("tmpfs", mountPoint, "tmpfs", 0, "size=256k,mode=0700") == 0, "errno \(errno)")
            defer { umount(mountPoint) }
            let path = mountPoint + "/full.db"

            var committed: Int64 = 0
            do {
                let db = try SQLiteDatabase(path: path)
                try db.migrate(testMigrations)
                var failure: SQLiteError?
                for index in 0..<1000 {
                    do {
                        try db.transaction {
                            try db.run(
                                "INSERT INTO peer(name, payload) VALUES (?, randomblob(4000))", [.text("row-\(index)")])
                        }
                        committed += 1
                    } catch let error as SQLiteError {
                        failure = error
                        break
                    }
                }
                let error = try #require(failure, "256 KiB filled up without an error")
                #expect(error == .full, "\(error)")
                #expect(error.isFull)
                #expect(error.message == "database or disk is full")
                #expect(committed > 0)
                #expect(!db.isInTransaction)
                #expect(try count(db, "peer") == committed)
            }

            let db = try SQLiteDatabase(path: path)
            #expect(try scalarText(db, "PRAGMA integrity_check") == "ok")
            #expect(try count(db, "peer") == committed)
        }
    }
}
