import Foundation
import Glibc
import Testing

/// A file where an exit test's child writes why it failed: Swift Testing returns no result (and
/// so no captured stderr) for a failed exit test, so the parent reads this instead.
public struct ChildReport: Sendable {
    /// The report file's path, unique to this report; pass it into the child.
    public let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("rivet-child-\(uniqueSuffix()).txt").path

    /// A report whose file does not exist yet.
    public init() {}

    /// Records the child's report as an issue when the exit test failed, then removes the file.
    public func collect(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard result == nil else { return }
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        Issue.record(
            "child process said: \(text.isEmpty ? "nothing (killed before reporting?)" : text)",
            sourceLocation: sourceLocation)
    }
}

/// In an exit test's child: writes `message` to the report file at `report` and to stderr, then
/// exits 1.
public func childFail(_ message: String, report: String) -> Never {
    _ = FileManager.default.createFile(atPath: report, contents: Data((message + "\n").utf8))
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

/// In an exit test's child: makes SIGALRM kill the process after `seconds`, so a hang fails the
/// test instead of stalling it. The child may inherit a mask blocking SIGALRM, so unblock it.
public func armHangGuard(seconds: UInt32) {
    var alarmOnly = sigset_t()
    sigemptyset(&alarmOnly)
    sigaddset(&alarmOnly, SIGALRM)
    pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
    signal(SIGALRM, SIG_DFL)
    alarm(seconds)
}

/// In an exit test's child, first thing: arms the hang guard (``armHangGuard(seconds:)``) and
/// points `DBUS_SYSTEM_BUS_ADDRESS` at `address`, before libdbus first reads it (it reads it once
/// per process).
public func prepareChild(systemBus address: String, hangGuardSeconds: UInt32) {
    armHangGuard(seconds: hangGuardSeconds)
    setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1)
}

/// A D-Bus address where no bus listens: a socket path in a directory that does not exist.
public func missingBusAddress() -> String {
    let socket = FileManager.default.temporaryDirectory
        .appendingPathComponent("rivet-no-bus-\(uniqueSuffix())/socket").path
    return "unix:path=\(socket)"
}

extension PrivateAvahi {
    /// In an exit test's child, first thing: attaches to the fixture in `directory` and prepares
    /// the child (``prepareChild(systemBus:hangGuardSeconds:)``) to use its private bus.
    public static func prepareChild(directory: String, hangGuardSeconds: UInt32) -> PrivateAvahi {
        let fixture = PrivateAvahi(directory: directory)
        AvahiTestSupport.prepareChild(systemBus: fixture.busAddress, hangGuardSeconds: hangGuardSeconds)
        return fixture
    }
}
