import ByteText
import Foundation
import OpenSSLKit
import RivetControl
import RivetDiscovery
import RivetGateway
import RivetPairing
import RivetRegistry
import RivetSchema
import RivetServer
import RivetTransport
import Synchronization
import SystemKit
#if canImport(Glibc)
import Glibc
import Timekeeping
#endif

/// What a daemon runs with: where it listens, which backend and schema, which application
/// devices pair with, and where its files are.
public struct RivetDaemonConfiguration: Sendable {
    /// The address to listen on: numeric (`127.0.0.1`, `::1`, `0.0.0.0`) or a name
    /// (`localhost`), bound at the first of its addresses that binds.
    public var listenHost: String
    /// The port (0 lets the kernel choose; the started daemon reports it).
    public var listenPort: UInt16
    /// Listening TCP sockets the service manager passed (socket activation, `sd_listen_fds(3)`):
    /// when not empty, the daemon accepts on these, all on one port, instead of binding
    /// `listenHost` and `listenPort` (then unused), and never closes and binds again.
    public var inheritedSockets: [Int32] = []
    /// The control socket as the service manager passed it (socket activation), or nil to bind
    /// `controlSocketPath`.
    public var inheritedControlSocket: InheritedControlSocket?
    /// The backend's program and arguments; the program is looked up in `PATH` unless it
    /// contains a slash.
    public var backendCommand: [String]
    /// The schema file (`rivet.rktd`) whose `device-*` allowlists and scopes the gateway obeys.
    public var schemaPath: String
    /// The application devices pair with; devices paired with another one are refused.
    public var applicationID: RivetApplicationID
    /// Where the server identity lives (`$XDG_STATE_HOME/rivet`; the key file is mode 0600).
    public var stateDirectory: String
    /// The pairing registry file.
    public var registryPath: String
    /// The control socket (`$XDG_RUNTIME_DIR/rivet/control.sock`); its directory must exist
    /// with mode 0700.
    public var controlSocketPath: String
    /// The gateway's bounds (512 KiB payloads, 64 pending calls per session, 8 sessions, 4 MiB
    /// or 256 frames queued per session).
    public var limits: RivetDeviceGatewayLimits = .default
    /// Sessions per device (2; one more replaces the device's oldest with `rivet.replaced`) and
    /// the hello deadline (10 s; then `rivet.hello-timeout`).
    public var sessionLimits = RivetSessionLimits()
    /// The backend's bounds: a deadline for each call (60 s), a watchdog for a backend that
    /// stops reading its stdin (10 s) and the bytes queued to it per session (4 MiB).
    public var backendLimits = RivetBackendLimits()
    /// The listener's admission bounds and stream buffers.
    public var listener = RivetListener.Configuration()
    /// Whether to advertise the listener through avahi-daemon (`--no-advertise` turns it off).
    public var advertise = true
    /// Where and how to advertise (`_rivet._tcp` on every interface avahi-daemon uses, under a
    /// random instance name unless `instanceName` chooses one).
    public var advertiser = RivetAdvertiser.Configuration()
    /// The clock every part runs on (the system's; tests may give their own). It replaces the
    /// listener's and the advertiser's clocks when the daemon starts them.
    public var clock: any RivetClock = SystemClock()
    /// `expire-unseen`: revoke devices not seen for this many days, at start and once a day
    /// after (on `clock`); nil (the default) never expires a device.
    public var expireUnseen: RivetDeviceExpiry?

    /// A configuration with the default bounds.
    public init(
        listenHost: String, listenPort: UInt16, backendCommand: [String], schemaPath: String,
        applicationID: RivetApplicationID, stateDirectory: String, registryPath: String, controlSocketPath: String
    ) {
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.backendCommand = backendCommand
        self.schemaPath = schemaPath
        self.applicationID = applicationID
        self.stateDirectory = stateDirectory
        self.registryPath = registryPath
        self.controlSocketPath = controlSocketPath
    }
}

/// The running gateway daemon: TLS listener, backend child, gateway policy, pairing and the
/// control socket, wired together (see docs/architecture.md, "The daemon").
///
/// `start()` brings the parts up in an order that leaves nothing behind when one fails; `stop()`
/// takes them down gracefully: the pairing window closes, every session is sent
/// `rivet.shutdown` and closed, the listener and the control socket stop, the backend's stdin
/// is closed and it gets `SIGTERM`, then `SIGKILL`, if it does not exit.
public final class RivetDaemon: Sendable {
    /// What a started daemon reports.
    public struct Started: Sendable, Equatable {
        /// The numeric address it listens on (a name given as the host resolved to it).
        public let host: String
        /// The port it listens on.
        public let port: UInt16
        /// The server fingerprint devices pin.
        public let fingerprint: SPKIFingerprint
        /// The backend's process ID.
        public let backendPID: Int32
    }

    /// The configuration it runs with.
    public let configuration: RivetDaemonConfiguration
    /// Its log.
    public let log: RivetDaemonLog
    private let parts = DaemonParts()

    /// A daemon that has not started.
    public init(configuration: RivetDaemonConfiguration, log: RivetDaemonLog) {
        self.configuration = configuration
        self.log = log
    }

    /// Reads the schema, loads (or creates) the server identity and the discovery secret, opens
    /// the registry, creates the control socket, binds the listening socket (or takes the
    /// service manager's, `inheritedSockets`), starts the backend, accepts connections, and then
    /// (unless `advertise` is off) advertises the port as `_rivet._tcp`. An absent avahi-daemon
    /// does not stop the daemon: the advertiser waits for it in the background.
    /// - Throws: ``RivetDaemonError`` naming the part that failed (`schemaFailed`,
    ///   `identityFailed`, `discoverySecretFailed`, `registryFailed`, `controlSocketFailed`, `alreadyRunning`,
    ///   `backendFailed`, `listenFailed`, `invalidConfiguration`); everything started before
    ///   is stopped again.
    public func start() throws(RivetDaemonError) -> Started {
        signal(SIGPIPE, SIG_IGN)
        guard !configuration.backendCommand.isEmpty, !configuration.backendCommand[0].isEmpty else {
            throw RivetDaemonError.invalidConfiguration.with("the backend command is empty")
        }
        let policy = try Self.loadPolicy(configuration.schemaPath)
        let identity = try Self.identity(stateDirectory: configuration.stateDirectory, registryPath: configuration.registryPath)
        let discoverySecret: RivetDiscoverySecret
        do {
            discoverySecret = try RivetDiscoverySecret.loadOrCreate(stateDirectory: configuration.stateDirectory)
        } catch {
            throw RivetDaemonError.discoverySecretFailed.with(error.message)
        }
        var advertiserConfiguration = configuration.advertiser
        advertiserConfiguration.clock = configuration.clock
        let advertising: DaemonAdvertising? =
            configuration.advertise ? try DaemonAdvertising(configuration: advertiserConfiguration, log: log) : nil
        let store: RivetDevicePairingStore
        let authenticator: RivetDeviceSessionAuthenticator
        do {
            store = try RivetDevicePairingStore(path: configuration.registryPath, clock: configuration.clock)
        } catch {
            throw RivetDaemonError.registryFailed.with(error.message)
        }
        do {
            authenticator = try RivetDeviceSessionAuthenticator(store: store)
        } catch {
            store.close()
            throw RivetDaemonError.registryFailed.with("cannot draw the authenticator's random bytes: \(error)")
        }
        let log = self.log
        // One thread drives every session's connection and reads the backend's stdout.
        let loop: StreamEventLoop
        do {
            loop = try StreamEventLoop(clock: configuration.clock)
            try loop.start(name: "rivet.sessions")
        } catch {
            store.close()
            throw RivetDaemonError.listenFailed.with("cannot start the session loop: \(error)")
        }
        let desk = PairingDesk(
            serverFingerprint: identity.fingerprint, store: store, applicationID: configuration.applicationID,
            discoverySecret: discoverySecret, log: log, clock: configuration.clock)
        // Evictions of pending connections are summed up, at most one line a second.
        let evictions = EvictionLog(clock: configuration.clock) { log.warn($0) }
        let expiry = configuration.expireUnseen.map {
            DeviceExpiry(rule: $0, store: store, clock: configuration.clock, log: log)
        }
        let core = GatewayCore(
            policy: policy, limits: configuration.limits, sessionLimits: configuration.sessionLimits,
            backendCommand: configuration.backendCommand, applicationID: configuration.applicationID,
            backendLimits: configuration.backendLimits, log: log,
            sessionLoop: loop, clock: configuration.clock,
            tick: { core in
                desk.tick()
                evictions.flush()
                log.reportSuppressed()
                expiry?.tick(core)
            })
        let handler = ControlHandler(desk: desk, core: core, store: store, policy: policy, log: log)
        let control = ControlServer(
            path: configuration.controlSocketPath, inherited: configuration.inheritedControlSocket, log: log, clock: configuration.clock
        ) { handler.handle($0) }
        do {
            try control.start()
        } catch {
            loop.stop()
            store.close()
            throw error
        }
        // Bind before the backend starts, so a port in use ends the start with nothing else
        // begun; connections wait in the backlog until the backend runs.
        var listenerConfiguration = configuration.listener
        listenerConfiguration.events = { event in Self.logListenerEvent(event, log, evictions) }
        listenerConfiguration.clock = configuration.clock
        let listener = RivetListener(
            configuration: listenerConfiguration, identity: identity, pairing: desk, authenticator: authenticator,
            handler: core, sessionLoop: loop)
        let port: UInt16
        let inherited = configuration.inheritedSockets
        do {
            port =
                inherited.isEmpty
                ? try listener.bind(host: configuration.listenHost, port: configuration.listenPort)
                : try listener.adopt(inherited)
        } catch {
            control.stop()
            loop.stop()
            store.close()
            let what =
                inherited.isEmpty
                ? "listen on \(joinHostPort(configuration.listenHost, configuration.listenPort))"
                : "accept on the service manager's sockets (\(Self.descriptors(inherited)))"
            var reason = error.message
            if inherited.isEmpty, error.systemErrno == EADDRINUSE {
                // Name what holds the port, as far as /proc tells this user.
                let holder = TCPPortHolder.find(
                    port: configuration.listenPort, address: IPAddressText.bytes(configuration.listenHost))
                reason = Self.portInUse(configuration.listenPort, by: holder)
            }
            throw RivetDaemonError.listenFailed.with("cannot \(what): \(reason)")
        }
        let host = listener.host ?? configuration.listenHost
        desk.listening(host: host, port: port)
        if let expiry {
            // The first pass, before any device is served; the timer runs the next a day later.
            log.info("devices not seen for \(expiry.rule.days) days expire (expire-unseen), checked now and once a day")
            expiry.pass(core)
        }
        do {
            try core.startBackend()
        } catch {
            listener.stop()
            control.stop()
            loop.stop()
            store.close()
            throw error
        }
        listener.startAccepting()
        parts.set(
            Running(
                listener: listener, control: control, core: core, desk: desk, store: store, advertising: advertising,
                sessionLoop: loop))
        let controlNamed = configuration.inheritedControlSocket.map { " (the service manager's socket: descriptor \($0.descriptor))" } ?? ""
        log.info("control socket at \(configuration.controlSocketPath)\(controlNamed)")
        log.info("server fingerprint \(identity.fingerprint.hex)")
        let named =
            !inherited.isEmpty ? " (the service manager's socket: \(Self.descriptors(inherited)))"
            : host == configuration.listenHost ? "" : " (\(configuration.listenHost))"
        log.info("listening on \(joinHostPort(host, port))\(named) for application \(configuration.applicationID)")
        if let advertising {
            advertising.start(host: host, port: port, secret: discoverySecret)
        } else if let name = configuration.advertiser.instanceName {
            log.info("not advertising (--no-advertise), so the name \(DisplayText.quoted(name)) is not used")
        } else {
            log.info("not advertising (--no-advertise)")
        }
        return Started(host: host, port: port, fingerprint: identity.fingerprint, backendPID: core.backendPID ?? 0)
    }

    /// Why a bind found `port` in use, from what /proc says about its holder: another rivetd
    /// of this user and its pid, another process of this user by name and pid, or (another
    /// user's, or not found) just "another process".
    static func portInUse(_ port: UInt16, by holder: TCPPortHolder) -> String {
        switch holder {
        case .process(let pid, "rivetd"):
            "port \(port) is in use by another rivetd of this user (pid \(pid)); each rivetd needs a port of its own"
        case .process(let pid, let name):
            "port \(port) is in use by \(DisplayText.quoted(name)) (pid \(pid)), a process of this user"
        case .unknown:
            "port \(port) is in use by another process"
        }
    }

    /// `descriptor 3`, `descriptors 3, 4`.
    private static func descriptors(_ fds: [Int32]) -> String {
        (fds.count == 1 ? "descriptor " : "descriptors ") + fds.map(String.init).joined(separator: ", ")
    }

    /// Stops gracefully (see the type's description) and returns once everything has stopped.
    /// Safe to call more than once; later calls return at once.
    public func stop() {
        guard let running = parts.take() else { return }
        let withdrawing = running.advertising == nil ? "" : "withdrawing the advertisement, "
        log.info("stopping: \(withdrawing)closing sessions, the listener, the control socket and the backend")
        running.advertising?.stop()
        try? running.desk.cancel()
        running.core.closeAllSessions(timeout: .seconds(2))
        running.listener.stop()
        running.control.stop()
        running.core.stopBackend(deadline: configuration.clock.now + .seconds(7))
        // Last: the loop also read the backend's stdout.
        running.sessionLoop.stop()
        running.store.close()
        log.reportSuppressed(all: true)
        log.info("stopped")
    }

    /// The open sessions (empty before start and after stop).
    public var sessions: [RivetControlSessionInfo] { parts.get()?.core.sessions() ?? [] }

    /// The backend's current process ID, or nil while none runs.
    public var backendPID: Int32? { parts.get()?.core.backendPID }

    /// Loads the server identity from `stateDirectory`, creating it only when nothing pins it:
    /// a missing key while the registry at `registryPath` holds paired devices is an error that
    /// says how to start over on purpose, since a new key would lock every one of them out.
    /// A registry that does not exist is not created.
    /// - Throws: `RivetDaemonError.identityFailed` (the message names the file and the reason),
    ///   `.registryFailed` when the registry must be read and cannot be.
    public static func identity(stateDirectory: String, registryPath: String) throws(RivetDaemonError) -> RivetServerIdentity {
        do {
            return try RivetServerIdentity.load(stateDirectory: stateDirectory)
        } catch where error == .notProvisioned {
            // Nothing to load yet: create it below, unless devices pin a key that was here.
        } catch {
            throw RivetDaemonError.identityFailed.with(error.message)
        }
        var info = stat()
        if lstat(registryPath, &info) == 0 {
            let devices: [RivetDevicePairedDevice]
            do {
                let store = try RivetDevicePairingStore(path: registryPath)
                defer { store.close() }
                devices = try store.list()
            } catch {
                throw RivetDaemonError.registryFailed.with(error.message)
            }
            if !devices.isEmpty {
                let keyPath = RivetServerIdentity.keyPath(in: stateDirectory)
                let pinned = Set(devices.map(\.serverFingerprint.hex)).sorted().joined(separator: ", ")
                let count = devices.count == 1 ? "1 paired device" : "\(devices.count) paired devices"
                throw RivetDaemonError.identityFailed.with(
                    "the server key \(keyPath) is missing, but the registry \(registryPath) holds \(count) pinned to the key that was there (fingerprint \(pinned)); a new key would lock them out, so rivetd makes none. Put the key back from a backup, or start over on purpose: revoke every device (rivet-pair --list, then rivet-pair --revoke ID for each) or move the registry away, then start rivetd again and pair the devices anew"
                )
            }
        }
        do {
            return try RivetServerIdentity.loadOrProvision(stateDirectory: stateDirectory)
        } catch {
            throw RivetDaemonError.identityFailed.with(error.message)
        }
    }

    static func loadPolicy(_ path: String) throws(RivetDaemonError) -> RivetDeviceGatewayPolicy {
        RivetDeviceGatewayPolicy(schema: try loadSchema(path))
    }

    /// Reads and validates the schema at `path` (see ``readSchema(_:)``).
    static func loadSchema(_ path: String) throws(RivetDaemonError) -> Schema {
        guard let text = String(validating: try readSchema(path), as: UTF8.self) else {
            throw RivetDaemonError.schemaFailed.with("cannot read the schema \(path): it is not UTF-8 text")
        }
        do {
            return try Schema.parse(text, file: path)
        } catch {
            throw RivetDaemonError.schemaFailed.with("the schema does not validate: \(error.description)")
        }
    }

    /// The longest schema file read (1 MiB).
    static let maximumSchemaBytes = 1 << 20

    /// Reads the schema through `RegularFile.read`: a regular file (a FIFO is never waited
    /// on) of at most ``maximumSchemaBytes``, a file that grows while it is read refused too.
    static func readSchema(_ path: String) throws(RivetDaemonError) -> [UInt8] {
        do {
            return try RegularFile.read(path, limit: maximumSchemaBytes)
        } catch {
            switch error {
            case .notRegularFile: throw RivetDaemonError.schemaFailed.with("the schema \(path) is not a regular file")
            case .tooLarge: throw RivetDaemonError.schemaFailed.with("the schema \(path) is larger than 1 MiB")
            case .system(let failure) where failure.operation == "read":
                throw RivetDaemonError.schemaFailed.with("cannot read the schema \(path): \(failure.description)")
            case .system(let failure): throw RivetDaemonError.schemaFailed.with("cannot read the schema \(path): \(failure.reason)")
            }
        }
    }

    private static func logListenerEvent(_ event: RivetListener.Event, _ log: RivetDaemonLog, _ evictions: EvictionLog) {
        switch event {
        case .refused(let peer): log.debug("refused a connection from \(peer): the listener is stopping")
        case .evicted(let peer): evictions.evicted(peer: peer)
        // Strangers cause these at will: each address gets a bounded share of the log.
        case .closed(let connection, let peer, let reason):
            log.limited(.debug, source: RivetLogLimiter.host(ofPeer: peer), "connection \(connection) from \(peer) closed: \(reason)")
        case .sessionStarted(let connection, let device): log.debug("connection \(connection) authenticated as device \(device)")
        case .sessionEnded(let connection, let device, let reason):
            log.debug("connection \(connection) of device \(device) ended: \(reason)")
        case .authenticationFailed(let connection, let peer, let device, let reason):
            log.warn("cannot check device \(device) from \(peer) (connection \(connection)); it was refused with serverError: \(reason)")
        }
    }
}

/// The parts of a started daemon.
private struct Running: Sendable {
    let listener: RivetListener
    let control: ControlServer
    let core: GatewayCore
    let desk: PairingDesk
    let store: RivetDevicePairingStore
    let advertising: DaemonAdvertising?
    let sessionLoop: StreamEventLoop
}

/// Holds the running parts; `take` hands them to exactly one `stop`.
private final class DaemonParts: Sendable {
    private let state = Mutex<Running?>(nil)
    func set(_ running: Running) { state.withLock { $0 = running } }
    func get() -> Running? { state.withLock { $0 } }
    func take() -> Running? { state.withLock { value in defer { value = nil }; return value } }
}

/// Answers control requests with the daemon's parts.
private struct ControlHandler: Sendable {
    let desk: PairingDesk
    let core: GatewayCore
    let store: RivetDevicePairingStore
    let policy: RivetDeviceGatewayPolicy
    let log: RivetDaemonLog
    /// Serializes a record change's registry write and its hand-over to the core, so two
    /// control connections changing one device leave the core with the registry's last record.
    let changes = DeviceChanges()

    func handle(_ request: RivetControlRequest) -> RivetControlJSON {
        do throws(RivetControlError) {
            return try answer(request)
        } catch {
            return error.response
        }
    }

    private func answer(_ request: RivetControlRequest) throws(RivetControlError) -> RivetControlJSON {
        switch request {
        case .open(nil):
            let left = try desk.open()
            return ["ok": true, "seconds_left": .integer(Int64(left.components.seconds))]
        case .open(let request?):
            let (left, link) = try desk.openForLink(host: request.host)
            return [
                "ok": true, "seconds_left": .integer(Int64(left.components.seconds)), "link": .string(link.text),
                "addresses": .array(([link.host] + link.additionalAddresses).map { .string($0) }),
            ]
        case .pending, .pendingChanges:
            // The schema's scopes ride along, so `rivet-pair --confirm` can refuse a misspelt
            // --scope before it waits for a device. With `changed_after` it first waits (at
            // most `wait_ms`, 1 s) for the next change, so `--open --qr` misses none.
            let body: RivetControlJSON
            if case .pendingChanges(let after, let wait) = request {
                body = desk.pending(changedAfter: after, wait: .milliseconds(wait))
            } else {
                body = desk.pending()
            }
            guard case .object(var members) = body else { return body }
            members["declared_scopes"] = .array(policy.declaredScopes.map { .string($0.name) })
            return .object(members)
        case .confirm(let code, let names, let replace):
            // Replacing a device with no scope named keeps that device's scopes.
            let scopes = names.isEmpty && replace != nil ? nil : try grantable(names)
            let paired = try desk.confirm(code: code, scopes: scopes, replace: replace)
            var body: [String: RivetControlJSON] = ["ok": true, "device": RivetControlShapes.device(paired.device)]
            guard replace != nil else { return .object(body) }
            // The registry forgot the replaced device with the new one's storing; now its
            // sessions close, as a revocation's do.
            let peers = paired.replaced.map { core.revoke(device: $0.deviceID) } ?? []
            if let old = paired.replaced {
                log.info("revoked device \(old.deviceID) (\(old.displayName.quoted)), replaced by \(paired.device.deviceID); \(Self.closed(peers))")
            }
            body["replaced"] = paired.replaced.map(RivetControlShapes.device) ?? .null
            body["sessions_closed"] = .integer(Int64(peers.count))
            return .object(body)
        case .reject:
            try desk.reject()
            return ["ok": true]
        case .cancel:
            try desk.cancel()
            return ["ok": true]
        case .sessions:
            return ["ok": true, "sessions": .array(core.sessions().map(RivetControlShapes.session))]
        case .revoke(let id):
            // The registry forgets the device first (committed), then its sessions close.
            let removed = try registry(id) { () throws(RivetDevicePairingStoreError) in try store.revoke(id, by: .rivetdControl) }
            let peers = core.revoke(device: id)
            log.info("revoked device \(id) (\(removed.displayName.quoted)); \(Self.closed(peers))")
            return ["ok": true, "device": RivetControlShapes.device(removed), "sessions_closed": .integer(Int64(peers.count))]
        case .rename(let id, let name):
            let (change, sessions) = try changes.apply(core) { () throws(RivetControlError) in
                try registry(id) { () throws(RivetDevicePairingStoreError) in try store.rename(id, to: name, by: .rivetdControl) }
            }
            if change.changed {
                log.info("renamed device \(id) from \(change.before.displayName.quoted) to \(name.quoted)")
            }
            return Self.changed(change, sessions: sessions)
        case .setScopes(let id, let names):
            let scopes = try grantable(names)
            let (change, sessions) = try changes.apply(core) { () throws(RivetControlError) in
                try registry(id) { () throws(RivetDevicePairingStoreError) in try store.setScopes(id, to: scopes, by: .rivetdControl) }
            }
            if change.changed {
                let list = { (scopes: Set<RivetDeviceScope>) in scopes.sorted().map(\.name).joined(separator: ",") }
                log.info(
                    "changed the scopes of device \(id) (\(change.after.displayName.quoted)) from [\(list(change.before.scopes))] to [\(list(change.after.scopes))]; \(sessions) live session\(sessions == 1 ? "" : "s") hold the new ones from their next frame")
            }
            return Self.changed(change, sessions: sessions)
        }
    }

    /// `no live session`, or `closed its live sessions from PEER, PEER`.
    private static func closed(_ peers: [String]) -> String {
        peers.isEmpty ? "no live session" : "closed its live session\(peers.count == 1 ? "" : "s") from \(peers.joined(separator: ", "))"
    }

    /// Runs a registry change of device `id`, its errors as control errors.
    private func registry<Value>(
        _ id: DeviceID, _ body: () throws(RivetDevicePairingStoreError) -> Value
    ) throws(RivetControlError) -> Value {
        do {
            return try body()
        } catch where error == .unknownDevice {
            throw RivetControlError.unknownDevice.with("no paired device has ID \(id.hex); nothing was changed")
        } catch {
            throw RivetControlError.registryFailed.with(error.message)
        }
    }

    /// The answer to `rename` and `set-scopes`.
    private static func changed(_ change: RivetDevicePairingStore.Change, sessions: Int) -> RivetControlJSON {
        [
            "ok": true, "device": RivetControlShapes.device(change.after), "changed": .bool(change.changed),
            "live_sessions": .integer(Int64(sessions)),
        ]
    }

    /// The scopes to grant: at least one, each a valid name the schema declares.
    private func grantable(_ names: [String]) throws(RivetControlError) -> Set<RivetDeviceScope> {
        let declared = policy.declaredScopes.map(\.name).joined(separator: ", ")
        guard !names.isEmpty else {
            throw RivetControlError.noScopes.with(
                "name at least one scope to grant (declared: \(declared)); a device granted nothing can do nothing")
        }
        var scopes: Set<RivetDeviceScope> = []
        for name in names {
            do {
                scopes.insert(try RivetDeviceScope(name))
            } catch {
                throw RivetControlError.invalidArgument.with("`\(name)` is not a scope name: \(error.message)")
            }
        }
        do {
            try policy.validateGrant(scopes)
        } catch {
            throw RivetControlError.unknownScope.with("\(error.message) (declared: \(declared))")
        }
        return scopes
    }
}

/// The lock of `ControlHandler`'s record changes.
private final class DeviceChanges: Sendable {
    private let lock = Mutex(())

    /// Runs `write` (the registry change), then hands the changed record to `core`, both under
    /// the lock; returns the change and the number of the device's open sessions.
    func apply(
        _ core: GatewayCore, _ write: () throws(RivetControlError) -> RivetDevicePairingStore.Change
    ) throws(RivetControlError) -> (RivetDevicePairingStore.Change, Int) {
        try lock.withLock { _ throws(RivetControlError) in
            let change = try write()
            return (change, core.deviceChanged(change.after))
        }
    }
}

extension RivetDaemonConfiguration {
    /// A listening Unix socket at `controlSocketPath` that the service manager made and holds
    /// (socket activation), as `ServiceManagerSockets.listeningUnix` found it: the daemon
    /// accepts on its `descriptor`, never binds or removes it, and names `listenerPID` (the
    /// manager, which called `listen`) in `control.pid`, since that is the pid clients see
    /// through `SO_PEERCRED`.
    public typealias InheritedControlSocket = ServiceManagerSockets.ListeningUnixSocket
}
