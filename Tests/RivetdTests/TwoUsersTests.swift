import Foundation
import Glibc
import RivetCompanion
import RivetPairing
import RivetSession
import RivetState
import TestSupport
import Testing
import ToolTestSupport

/// Several users on one desktop (issue 29): two real Unix users, each running a rivetd of their
/// own with their own home, runtime directory, state, key, registry and control socket, on
/// their own port, both advertised through the shared avahi-daemon. A companion pairs with
/// each and calls each; revoking on one leaves the other alone; one user cannot reach the
/// other's control socket.
@Suite(.serialized) struct TwoUsersTests {
    /// One user's desktop: the user, a home it owns (0755, as Debian makes homes) with its
    /// runtime directory `run` (0700, as /run/user/UID), and its rivetd, run as it.
    struct Desktop {
        let user: LocalUser
        let home: Home
        let daemon: Daemon

        static func start() async throws -> Desktop {
            let user = try LocalUser()
            let home = try Home()
            do {
                try #require(chown(home.path, user.uid, user.gid) == 0)
                try #require(mkdir(home.path + "/run", 0o700) == 0)
                try #require(chown(home.path + "/run", user.uid, user.gid) == 0)
                let daemon = try await Daemon.start(home, logLevel: "info", prefix: user.prefix)
                return Desktop(user: user, home: home, daemon: daemon)
            } catch {
                home.remove()
                throw error
            }
        }

        /// Runs rivet-pair as this user (in `environment`, this user's own by default).
        func rivetPair(_ arguments: [String], environment: [String: String]? = nil) throws -> Spawned {
            try Spawned.start(
                ToolProcess.path(of: "rivet-pair"), arguments, environment: environment ?? home.environment,
                directory: home.path, prefix: user.prefix)
        }

        /// Pairs a companion living in `phone` (run as root, the test's user) by code, granting
        /// `viewer`, and returns its credential.
        func pair(_ phone: Home) async throws -> RivetCompanionCredential {
            let open = try rivetPair(["--open"])
            #expect(try await open.wait() == 0, "\(open.stderr)")
            let (connect, code) = try await PairingTests.ask(daemon, deviceHome: phone)
            let confirm = try rivetPair(["--confirm", "--code", code, "--scope", "viewer"])
            try await daemon.waitForLog("the desktop confirmed; waiting for the device")
            connect.write("y\n")
            #expect(try await connect.wait() == 0, "\(connect.stderr)")
            #expect(try await confirm.wait() == 0, "\(confirm.stderr)")
            return try RivetCompanionCredentialStore(path: phone.path + "/state/rivet/companion-credential.json").load()
        }

        /// The device IDs `rivet-pair --list --json`, run as this user, lists.
        func listed() async throws -> [String] {
            let list = try rivetPair(["--list", "--json"])
            #expect(try await list.wait() == 0, "\(list.stderr)")
            return list.stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["device_id"] as? String
            }
        }

        func finish() async {
            await daemon.finish()
        }
    }

    /// Owner and mode of `path`.
    static func owner(_ path: String) -> (uid: uid_t, mode: mode_t)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_uid, info.st_mode & 0o777)
    }

    /// Makes a call through a session resumed with `credential` and checks the answer.
    static func call(_ daemon: Daemon, _ credential: RivetCompanionCredential) async throws {
        let session = try await daemon.companion(credential)
        let score = try await session.client.send(CurrentScore(gameID: "final"))
        #expect(score.gameID == "final")
        await session.close()
    }

    @Test("two users' rivetd side by side: own files and ports, both advertised, a companion pairs with and calls each, a revocation stays with its user, and neither reaches the other's control socket")
    func twoUsers() async throws {
        try #require(
            geteuid() == 0,
            "this test creates two Unix users (useradd) and runs rivetd as each: it needs root (CI runs as root); run the suite as root")
        let ana = try await Desktop.start()
        let bo: Desktop
        do {
            bo = try await Desktop.start()
        } catch {
            await ana.finish()
            throw error
        }
        let phones = try Home()
        do {
            try await Self.sideBySide(ana, bo, phones: phones)
        } catch {
            await ana.finish()
            await bo.finish()
            phones.remove()
            throw error
        }
        await ana.finish()
        await bo.finish()
        phones.remove()
    }

    static func sideBySide(_ ana: Desktop, _ bo: Desktop, phones: Home) async throws {
        // Each has its own port, key, and files owned by its user alone.
        #expect(ana.daemon.port != bo.daemon.port)
        #expect(ana.daemon.fingerprint != bo.daemon.fingerprint)
        for desktop in [ana, bo] {
            let home = desktop.home
            for (path, mode) in [
                (home.stateDirectory, 0o700), (home.stateDirectory + "/server-key.pem", 0o600),
                (home.stateDirectory + "/discovery-secret", 0o600), (home.registry, 0o600), (home.path + "/run/rivet", 0o700),
            ] as [(String, mode_t)] {
                let found = try #require(Self.owner(path), "\(path)")
                #expect(found.uid == desktop.user.uid && found.mode == mode, "\(path): uid \(found.uid), mode \(String(found.mode, radix: 8))")
            }
            #expect(Self.owner(home.socket)?.uid == desktop.user.uid)
            #expect(desktop.daemon.log.contains("control socket at \(home.socket)"))
        }

        // Both advertised, under names that tell them apart.
        var names: [UInt16: String] = [:]
        try await eventually("rivet-browse to list both users' rivetd", timeout: .seconds(20)) {
            let services = try await AdvertiseTests.browse(phones)
            for port in [ana.daemon.port, bo.daemon.port] {
                names[port] = services.first { $0["port"] as? Int == Int(port) }?["name"] as? String
            }
            return names.count == 2
        }
        let anaName = try #require(names[ana.daemon.port]), boName = try #require(names[bo.daemon.port])
        #expect(anaName != boName && anaName.hasPrefix("Rivet ") && boName.hasPrefix("Rivet "), "\(anaName), \(boName)")

        // A companion pairs with each and calls each.
        let anaPhone = try phones.device("ana-phone"), boPhone = try phones.device("bo-phone")
        let anaCredential = try await ana.pair(anaPhone)
        let boCredential = try await bo.pair(boPhone)
        #expect(anaCredential.serverFingerprint == ana.daemon.fingerprint)
        #expect(boCredential.serverFingerprint == bo.daemon.fingerprint)
        try await Self.call(ana.daemon, anaCredential)
        try await Self.call(bo.daemon, boCredential)
        #expect(try await ana.listed() == [anaCredential.deviceID.hex])
        #expect(try await bo.listed() == [boCredential.deviceID.hex])
        // One user's device is not the other's: it pins Ana's key, which Bo's rivetd does not have.
        await #expect(throws: RivetClientError.pinMismatch) { try await bo.daemon.companion(anaCredential) }

        // Bo, with Ana's runtime directory, cannot reach her control socket: rivet-pair says so
        // in one line, and revokes nothing anywhere.
        var crossed = bo.home.environment
        crossed["XDG_RUNTIME_DIR"] = ana.home.path + "/run"
        for arguments in [["--sessions"], ["--revoke", anaCredential.deviceID.hex]] {
            let attempt = try bo.rivetPair(arguments, environment: crossed)
            let status = try await attempt.wait()
            #expect(status != 0, "\(arguments): \(attempt.stdout)")
            #expect(attempt.stderr.split(separator: "\n").count == 1, "\(arguments): \(attempt.stderr)")
            #expect(attempt.stderr.contains(ana.home.path + "/run"), "\(arguments): \(attempt.stderr)")
            #expect(attempt.stderr.contains("ermission denied"), "\(arguments): \(attempt.stderr)")
        }
        // A raw connect as Bo is refused by the kernel.
        let script = """
            import errno, socket
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(\(String(reflecting: ana.home.socket)))
                print("connected")
            except OSError as e:
                print(errno.errorcode[e.errno])
            """
        let raw = try Spawned.start(
            "/usr/bin/python3", ["-c", script], environment: ["PATH": "/usr/bin:/bin"], directory: bo.home.path, prefix: bo.user.prefix)
        #expect(try await raw.wait() == 0, "\(raw.stderr)")
        #expect(raw.stdout == "EACCES\n", "\(raw.stdout)")
        #expect(try await ana.listed() == [anaCredential.deviceID.hex])

        // Revoking on Ana's leaves Bo's untouched.
        let revoke = try ana.rivetPair(["--revoke", anaCredential.deviceID.hex])
        #expect(try await revoke.wait() == 0, "\(revoke.stderr)")
        #expect(try await ana.listed().isEmpty)
        await #expect(throws: RivetClientError.credentialRejected) { try await ana.daemon.companion(anaCredential) }
        #expect(try await bo.listed() == [boCredential.deviceID.hex])
        try await Self.call(bo.daemon, boCredential)
        #expect(!bo.daemon.log.contains("revoked"), "\(bo.daemon.log)")
    }
}
