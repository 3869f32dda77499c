import CommandLineFiles
import CommandLineKit
import Foundation
import Glibc
import Testing

func mode(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

struct ModeMismatch: Error, CustomStringConvertible {
    let description: String
}

/// One test at a time: Swift Testing reads an exit test's output and back channel with blocking
/// reads on threads of Swift's cooperative pool (two on a two-core machine) until the child
/// exits, so several exit tests at once stalled every other test of a parallel `swift test`.
@Suite(.serialized) struct XDGTests {
    @Test func pathsFromTheEnvironment() throws {
        let dirs = try XDGDirectories(appName: "rivet", environment: [
            "HOME": "/home/u", "XDG_STATE_HOME": "/s/", "XDG_CONFIG_HOME": "/c", "XDG_RUNTIME_DIR": "/run/user/5",
        ], userID: 5)
        #expect(dirs.state.path == "/s/rivet")
        #expect(dirs.config.path == "/c/rivet")
        #expect(dirs.runtime.path == "/run/user/5/rivet")
        #expect(!dirs.runtimeIsFallback)
    }

    @Test func defaultsAndRelativeOrEmptyValuesIgnored() throws {
        let dirs = try XDGDirectories(appName: "rivet", environment: [
            "HOME": "/home/u", "XDG_STATE_HOME": "relative/state", "XDG_CONFIG_HOME": "", "XDG_RUNTIME_DIR": "run",
        ], userID: 1000)
        #expect(dirs.state.path == "/home/u/.local/state/rivet")
        #expect(dirs.config.path == "/home/u/.config/rivet")
        #expect(dirs.runtime.path == "/tmp/rivet-1000/rivet")
        #expect(dirs.runtimeIsFallback)
    }

    @Test func homeFromThePasswordDatabaseWhenUnsetOrRelative() throws {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else {
            Issue.record("no password entry for uid \(getuid())")
            return
        }
        let home = String(cString: directory)
        for environment in [[:], ["HOME": "relative"]] {
            let dirs = try XDGDirectories(appName: "rivet", environment: environment)
            #expect(dirs.config.path == URL(fileURLWithPath: home + "/.config/rivet").path)
        }
    }

    @Test func invalidAppNames() {
        for name in ["", "a/b", ".", ".."] {
            #expect(throws: XDGError.invalidAppName) { try XDGDirectories(appName: name, environment: ["HOME": "/h"]) }
        }
    }

    /// Creates every kind under `root` and checks each created component is 0700.
    static func createAndCheck(root: String) throws {
        let dirs = try XDGDirectories(appName: "app", environment: [
            "HOME": root + "/home", "XDG_RUNTIME_DIR": root + "/run/user",
        ])
        for kind in XDGDirectories.Kind.allCases {
            try dirs.ensure(kind)
        }
        for path in [
            "/home", "/home/.local", "/home/.local/state", "/home/.local/state/app", "/home/.config",
            "/home/.config/app", "/run", "/run/user", "/run/user/app",
        ] {
            let found = mode(root + path)
            if found != 0o700 {
                throw ModeMismatch(description: "\(path) has mode \(String(found ?? 0, radix: 8))")
            }
        }
        // Idempotent.
        try dirs.ensure(.state)
    }

    @Test(arguments: [0o077 as mode_t, 0o000, 0o777, 0o022])
    func createdWith0700WhateverTheUmask(mask: mode_t) async throws {
        let root = try Paths.temporaryDirectory().path
        defer { try? FileManager.default.removeItem(atPath: root) }
        await #expect(processExitsWith: .success) { [root = root as String, mask = mask as mode_t] in
            umask(mask)
            try XDGTests.createAndCheck(root: root)
        }
    }

    /// A fresh application root in a temp dir, and its directories object.
    func fixture() throws -> (root: URL, dirs: XDGDirectories) {
        let root = try Paths.temporaryDirectory()
        let dirs = try XDGDirectories(appName: "app", environment: [
            "HOME": root.path, "XDG_STATE_HOME": root.appendingPathComponent("state").path,
        ])
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("state"), withIntermediateDirectories: true)
        return (root, dirs)
    }

    @Test func refusesGroupWritable() throws {
        let (root, dirs) = try fixture()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = dirs.state.path
        #expect(mkdir(app, 0o700) == 0 && chmod(app, 0o770) == 0)
        let error = #expect(throws: XDGError.insecurePermissions) { try dirs.ensure(.state) }
        #expect(error?.message == "refusing to use \(app): it is writable by group or others (mode 770); run 'chmod 700 \(app)'")
        #expect(chmod(app, 0o702) == 0)
        #expect(throws: XDGError.insecurePermissions) { try dirs.ensure(.state) }
        // Readable but not writable by others is accepted as it is.
        #expect(chmod(app, 0o755) == 0)
        #expect(try dirs.ensure(.state) == dirs.state)
    }

    @Test func refusesASymbolicLink() throws {
        let (root, dirs) = try fixture()
        defer { try? FileManager.default.removeItem(at: root) }
        let target = root.appendingPathComponent("elsewhere").path
        #expect(mkdir(target, 0o700) == 0)
        #expect(symlink(target, dirs.state.path) == 0)
        let error = #expect(throws: XDGError.symbolicLink) { try dirs.ensure(.state) }
        #expect(error?.message.contains("is a symbolic link") == true)
        // A dangling link is refused too, and nothing is created through it.
        #expect(rmdir(target) == 0)
        #expect(throws: XDGError.symbolicLink) { try dirs.ensure(.state) }
        #expect(mode(target) == nil)
    }

    @Test func refusesAFile() throws {
        let (root, dirs) = try fixture()
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(FileManager.default.createFile(atPath: dirs.state.path, contents: Data()))
        let error = #expect(throws: XDGError.notADirectory) { try dirs.ensure(.state) }
        #expect(error?.message == "refusing to use \(dirs.state.path): it is not a directory")
        // A file where a parent should be.
        let blocked = try XDGDirectories(appName: "app", environment: [
            "HOME": root.path, "XDG_CONFIG_HOME": dirs.state.path + "/config",
        ])
        #expect(throws: XDGError.notADirectory) { try blocked.ensure(.config) }
    }

    @Test func refusesAnotherOwner() throws {
        let root = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let other = getuid() &+ 4242
        let dirs = try XDGDirectories(
            appName: "app", environment: ["HOME": root.path], userID: other)
        let error = #expect(throws: XDGError.wrongOwner) { try dirs.ensure(.config) }
        #expect(error?.message == "refusing to use \(dirs.config.path): it is owned by uid \(getuid()), not by uid \(other)")
    }

    @Test func runtimeFallbackUnderTmp() throws {
        let app = "clk-test-\(UUID().uuidString.prefix(8))"
        let base = "/tmp/\(app)-\(getuid())"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let dirs = try XDGDirectories(appName: app, environment: ["HOME": "/nonexistent"])
        #expect(dirs.runtime.path == base + "/" + app)
        try dirs.ensure(.runtime)
        #expect(mode(base) == 0o700)
        #expect(mode(base + "/" + app) == 0o700)

        // A base someone left world-writable is refused.
        #expect(chmod(base, 0o777) == 0)
        #expect(throws: XDGError.insecurePermissions) { try dirs.ensure(.runtime) }
    }
}
