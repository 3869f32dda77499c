import RivetDiscovery
import RivetPairing
import RivetRegistry
import RivetSchema
import RivetServer
import SystemKit
import Timekeeping
#if canImport(Glibc)
import Glibc
#endif

/// One line of `rivetd --check`: `NAME: TEXT`, and whether it lets rivetd start.
public struct RivetDaemonCheckItem: Sendable, Equatable {
    /// What was checked (`schema`, `key`…).
    public let name: String
    /// Whether rivetd can start with it.
    public let passed: Bool
    /// `ok (…)`, `missing (would be created at PATH)`, or `error: what is wrong`.
    public let text: String

    /// An item that lets rivetd start.
    public static func passed(_ name: String, _ text: String) -> Self { Self(name: name, passed: true, text: text) }
    /// An item that stops rivetd; `problem` says why.
    public static func failed(_ name: String, _ problem: String) -> Self {
        Self(name: name, passed: false, text: "error: " + problem)
    }

    /// `NAME: TEXT`.
    public var line: String { "\(name): \(text)" }
}

/// What `rivetd --check` reads, each part as `RivetDaemon.start()` would use it but read-only:
/// nothing is created, no registry is migrated, nothing listens or is started.
public enum RivetDaemonCheck {
    /// The schema at `path`: read and validated as at start.
    public static func schema(_ path: String) -> RivetDaemonCheckItem {
        do {
            let schema = try RivetDaemon.loadSchema(path)
            let counts = [
                counted(schema.deviceRPCs.count, "call"), counted(schema.deviceEvents.count, "event"),
                counted(schema.deviceState.count, "state key"), counted(schema.scopes.count, "scope"),
            ]
            return .passed("schema", "ok (\(counts.joined(separator: ", ")); \(path))")
        } catch {
            return .failed("schema", error.message)
        }
    }

    /// The server key in `stateDirectory`: loaded, never created. A missing key passes unless
    /// `registry` (read once by ``readRegistry(_:)``) holds paired devices, which pin the key
    /// that was there.
    public static func key(stateDirectory: String, registry: RegistryReading) -> RivetDaemonCheckItem {
        let path = RivetServerIdentity.keyPath(in: stateDirectory)
        do {
            let identity = try RivetServerIdentity.load(stateDirectory: stateDirectory)
            return .passed("key", "ok (fingerprint \(identity.fingerprintHex); \(path))")
        } catch where error == .notProvisioned {
            guard case .some(.success(let devices)) = registry.devices, !devices.isEmpty else {
                return .passed("key", "missing (would be created at \(path))")
            }
            return .failed(
                "key",
                "\(path) is missing, but the registry \(registry.path) holds \(counted(devices.count, "paired device")) pinned to the key that was there; rivetd makes no new key (see rivetd(1), FILES)")
        } catch {
            return .failed("key", error.message)
        }
    }

    /// The discovery secret in `stateDirectory`: loaded, never created.
    public static func secret(stateDirectory: String) -> RivetDaemonCheckItem {
        do {
            if try RivetDiscoverySecret.loadExisting(stateDirectory: stateDirectory) == nil {
                return .passed("secret", "missing (would be created at \(RivetDiscoverySecret.path(in: stateDirectory)))")
            }
            return .passed("secret", "ok (\(RivetDiscoverySecret.path(in: stateDirectory)))")
        } catch {
            return .failed("secret", error.message)
        }
    }

    /// The registry as ``readRegistry(_:)`` read it: its devices counted.
    public static func registry(_ registry: RegistryReading) -> RivetDaemonCheckItem {
        let path = registry.path
        switch registry.devices {
        case nil: return .passed("registry", "missing (would be created at \(path))")
        case .success(let devices): return .passed("registry", "ok (\(counted(devices.count, "device")); \(path))")
        case .failure(let error): return .failed("registry", error.message)
        }
    }

    /// The `expire-unseen` setting, and how many of the registry's devices are past it at
    /// `now` (they go when rivetd starts, unless they hold a live session).
    public static func expiry(_ rule: RivetDeviceExpiry?, registry: RegistryReading, now: WallClockTime) -> RivetDaemonCheckItem {
        guard let rule else { return .passed("expire-unseen", "ok (not set: devices never expire)") }
        var past = ""
        if case .success(let devices)? = registry.devices {
            let due = devices.count { rule.isDue($0, at: now) }
            past = "; \(due == 1 ? "1 device is" : "\(due) devices are") past it now"
        }
        return .passed(
            "expire-unseen",
            "ok (devices not seen for \(counted(rule.days, "day")) are revoked at start and once a day\(past))")
    }

    /// The backend's program: a path (when it contains a slash) or the first match in
    /// `searchPath` (`PATH`; glibc's default `/bin:/usr/bin` when nil), as `posix_spawnp` finds
    /// it: an executable regular file.
    public static func backend(_ command: [String], searchPath: String?) -> RivetDaemonCheckItem {
        guard let program = command.first, !program.isEmpty else {
            return .failed("backend", "the backend command is empty")
        }
        if program.contains("/") {
            if let problem = notExecutable(program) { return .failed("backend", problem) }
            return .passed("backend", "ok (\(program))")
        }
        let directories = (searchPath ?? "/bin:/usr/bin").split(separator: ":", omittingEmptySubsequences: false)
        for directory in directories {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + program
            if notExecutable(candidate) == nil { return .passed("backend", "ok (\(candidate))") }
        }
        return .failed("backend", "\(program) not found: no executable file of that name in PATH (\(searchPath ?? "/bin:/usr/bin"))")
    }

    /// Why `path` cannot be run, or nil when it is an executable regular file.
    private static func notExecutable(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path): \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFREG else { return "\(path) is not a regular file" }
        guard access(path, X_OK) == 0 else { return "\(path) is not executable" }
        return nil
    }

    /// The registry at a path as `--check` read it, once, for the key and registry items.
    public struct RegistryReading: Sendable {
        /// The registry file.
        public let path: String
        /// Its devices; nil when there is no file.
        let devices: Result<[RivetDevicePairedDevice], RivetDevicePairingStoreError>?
    }

    /// The registry at `path`, opened read-only: nothing is created or migrated.
    public static func readRegistry(_ path: String) -> RegistryReading {
        do {
            let store = try RivetDevicePairingStore(path: path, access: .readOnly)
            defer { store.close() }
            return RegistryReading(path: path, devices: .success(try store.list()))
        } catch where error == .notFound {
            return RegistryReading(path: path, devices: nil)
        } catch {
            return RegistryReading(path: path, devices: .failure(error))
        }
    }

    private static func counted(_ count: Int, _ noun: String) -> String {
        count == 1 ? "1 \(noun)" : "\(count) \(noun)s"
    }
}
