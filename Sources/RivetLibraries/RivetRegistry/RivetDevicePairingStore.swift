import Foundation
import Glibc
import OpenSSLKit
import RivetPairing
import RivetState
import SQLiteKit
import Synchronization
import SystemKit
import Timekeeping

/// The pairing registry: one SQLite file that `rivetd` and `rivet-pair` share (each process
/// opens its own store; SQLite's locks and the busy timeout arbitrate).
///
/// - The file is created with mode 0600 and its missing parent directories with 0700. An
///   existing file (or `-wal`/`-shm`) that group or others can access, that another user owns,
///   or that is a symbolic link is refused with a message that says how to fix it.
/// - WAL journal, `synchronous=FULL` (a commit survives power loss), foreign keys on,
///   `secure_delete` on, and a busy timeout (default 5 s) for the other process's lock.
/// - The schema is versioned by `PRAGMA user_version` and marked by `PRAGMA application_id`;
///   a registry from a newer schema is refused without writing anything.
/// - Per device it keeps the metadata of `RivetDevicePairedDevice` and `verifier = SHA-256(K)`.
///   The credential `K` itself is never stored, so a copied registry cannot be used to
///   impersonate a device.
/// - From schema version 2 it keeps each device's history (`RivetDeviceEvent`: paired, scopes
///   changed, renamed, revoked, replaced, expired), written in the transaction of the change it records, kept after
///   a revocation, and trimmed to the newest ``historyLimit`` entries per device in that same
///   transaction. No entry holds a credential, verifier or token.
///
/// Every method runs on the store's own connection under a lock, so one store may be shared by
/// tasks and threads.
public final class RivetDevicePairingStore: Sendable {
    /// The schema version this program writes and reads (`PRAGMA user_version`).
    public static let schemaVersion: Int32 = 2
    /// The most history entries kept per device (the newest; older ones are deleted in the
    /// transaction that adds one more).
    public static let historyLimit = 100
    /// The longest `detail` of a history entry, in bytes of UTF-8 (two quoted names fit).
    static let maximumDetailBytes = 4096
    /// `PRAGMA application_id` of a registry: ASCII `RIVP`.
    public static let sqliteApplicationID: Int32 = 0x5249_5650

    /// The registry file's path.
    public let path: String
    /// The schema version of the file as opened: ``schemaVersion`` after a writable open (it
    /// migrates), the file's own after a read-only one (version 1 keeps no history).
    public let fileSchemaVersion: Int32
    /// Whether the file keeps device history (schema version 2 or later).
    public var keepsHistory: Bool { fileSchemaVersion >= 2 }
    private let database: Mutex<SQLiteDatabase>
    /// Where the times of history entries come from.
    private let clock: any RivetClock

    private static let migrations = [
        SQLiteMigration(
            version: 1,
            sql: """
                CREATE TABLE paired_device (
                    device_id BLOB PRIMARY KEY NOT NULL CHECK (length(device_id) = 16),
                    display_name TEXT NOT NULL CHECK (length(CAST(display_name AS BLOB)) BETWEEN 1 AND 128),
                    application_id TEXT NOT NULL CHECK (length(CAST(application_id AS BLOB)) BETWEEN 1 AND 255),
                    server_fingerprint BLOB NOT NULL CHECK (length(server_fingerprint) = 32),
                    created_ms INTEGER NOT NULL,
                    last_seen_ms INTEGER,
                    verifier BLOB NOT NULL CHECK (length(verifier) = 32)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE device_scope (
                    device_id BLOB NOT NULL REFERENCES paired_device(device_id) ON DELETE CASCADE,
                    scope TEXT NOT NULL CHECK (length(scope) BETWEEN 1 AND 64),
                    PRIMARY KEY (device_id, scope)
                ) STRICT, WITHOUT ROWID;
                PRAGMA application_id = \(sqliteApplicationID);
                """),
        // History: append-only (no update; deletes only trim the oldest), no foreign key, so a
        // revoked device's entries stay. Devices paired before get one `paired` entry at their
        // pairing time.
        SQLiteMigration(
            version: 2,
            sql: """
                CREATE TABLE device_event (
                    event_id INTEGER PRIMARY KEY,
                    device_id BLOB NOT NULL CHECK (length(device_id) = 16),
                    time_ms INTEGER NOT NULL,
                    kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 32),
                    name TEXT NOT NULL CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 128),
                    detail TEXT NOT NULL CHECK (length(CAST(detail AS BLOB)) <= \(maximumDetailBytes))
                ) STRICT;
                CREATE INDEX device_event_by_device ON device_event (device_id, event_id);
                CREATE TRIGGER device_event_append_only BEFORE UPDATE ON device_event
                BEGIN SELECT RAISE(ABORT, 'device_event is append-only'); END;
                INSERT INTO device_event (device_id, time_ms, kind, name, detail)
                    SELECT device_id, created_ms, 'paired', display_name, '\(RivetDeviceEventDetail.beforeHistory)'
                    FROM paired_device ORDER BY created_ms, device_id;
                """),
    ]

    /// How a store opens its file.
    public enum Access: Sendable, Equatable {
        /// Read and write, creating the file (and missing parent directories, mode 0700) when
        /// absent: what rivetd does.
        case create
        /// Read and write an existing registry; a missing file is `.notFound` and nothing is
        /// created.
        case readWrite
        /// Read only (`SQLITE_OPEN_READONLY`): nothing is created or changed, not even the
        /// journal mode or the `application_id` stamp; a missing file is `.notFound`.
        case readOnly
    }

    /// Opens the registry at `path` and, unless read-only, migrates its schema to
    /// `schemaVersion`.
    ///
    /// Before anything is written (the switch to WAL rewrites the file's header) the file is
    /// recognised: `application_id` `RIVP`, or (a registry written before the stamp) schema
    /// version 1 with exactly the registry's two tables, or an empty database, which is made a
    /// registry. Anything else is `.notARegistry`, its bytes unchanged. Then `PRAGMA
    /// quick_check` must pass: a damaged file is `.damaged`.
    /// - Parameters:
    ///   - path: the registry file.
    ///   - busyTimeout: how long an operation waits for another process's write lock.
    ///   - access: whether the file may be created or written (default: `.create`).
    ///   - clock: the clock of history entries' times.
    /// - Throws: `RivetDevicePairingStoreError.invalidPath`, `.notFound`, `.symlink`,
    ///   `.notRegularFile`, `.insecurePermissions`, `.notARegistry`, `.schemaTooNew` (nothing
    ///   written), `.damaged`, `.fileSystem`, `.database`.
    public init(
        path: String, busyTimeout: Duration = .seconds(5), access: Access = .create, clock: any RivetClock = SystemClock()
    ) throws(RivetDevicePairingStoreError) {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw RivetDevicePairingStoreError.invalidPath.with("the pairing registry path must be a non-empty file path")
        }
        self.path = path
        self.clock = clock
        for file in [path, path + "-wal", path + "-shm"] {
            do {
                if file == path && access == .create {
                    do {
                        try PrivateFile.createDirectories(PrivateFile.splitPath(path).directory)
                    } catch {
                        throw PrivateFileError.system(error)
                    }
                }
                if try PrivateFile.inspect(file) == nil && file == path && access != .create {
                    throw RivetDevicePairingStoreError.notFound.with(
                        "there is no pairing registry at \(path) (no such file; nothing was created)")
                }
            } catch let error as PrivateFileError {
                throw RivetDevicePairingStoreError(error, path: file)
            } catch let error as RivetDevicePairingStoreError {
                throw error
            } catch {
                throw RivetDevicePairingStoreError.fileSystem.with("inspecting \(file) failed: \(error)")
            }
        }
        let db: SQLiteDatabase
        do {
            db = try SQLiteDatabase(path: path, busyTimeout: busyTimeout, readOnly: access == .readOnly, enablesWAL: false)
        } catch let error as SQLiteError where error.isNotADatabase {
            throw RivetDevicePairingStoreError.notARegistry.with(
                "\(path) is not an SQLite database, so it is not a Rivet pairing registry", sqliteError: error)
        } catch let error as SQLiteError where error == .symlink {
            throw RivetDevicePairingStoreError.symlink.with(
                "\(path) (or its -wal/-shm companion) is a symbolic link; the registry is never followed through a link")
        } catch {
            throw Self.databaseError(error, "open \(path)")
        }
        // The file may have been swapped between the check above and SQLite's open.
        if db.fileMode & 0o077 != 0 {
            db.close()
            throw RivetDevicePairingStoreError(.insecureMode(db.fileMode), path: path)
        }
        if db.fileOwnerID != geteuid() {
            db.close()
            throw RivetDevicePairingStoreError(.wrongOwner(uid: db.fileOwnerID), path: path)
        }
        do {
            fileSchemaVersion = try Self.prepare(db, path: path, writable: access != .readOnly)
        } catch {
            db.close()
            throw error
        }
        database = Mutex(db)
    }

    /// Opens the registry at `RivetStatePaths.registryPath(environment:)`.
    /// - Throws: `RivetDevicePairingStoreError.invalidPath` when the environment names no state
    ///   directory; otherwise as `init(path:busyTimeout:)`.
    public static func standard(
        environment: [String: String] = ProcessInfo.processInfo.environment, busyTimeout: Duration = .seconds(5),
        access: Access = .create, clock: any RivetClock = SystemClock()
    ) throws(RivetDevicePairingStoreError) -> RivetDevicePairingStore {
        let path: String
        do {
            path = try RivetStatePaths.registryPath(environment: environment)
        } catch {
            throw RivetDevicePairingStoreError.invalidPath.with(error.message)
        }
        return try RivetDevicePairingStore(path: path, busyTimeout: busyTimeout, access: access, clock: clock)
    }

    /// The tables of schema version 1, by which a registry written before the `application_id`
    /// stamp is recognised.
    private static let tables: Set<String> = ["paired_device", "device_scope"]

    /// Recognises, checks and (when writable) migrates the file; returns its schema version.
    private static func prepare(_ db: SQLiteDatabase, path: String, writable: Bool) throws(RivetDevicePairingStoreError) -> Int32 {
        do {
            // One read transaction, so the four facts are one state of the file: read one by one,
            // another process creating the registry between them (its version still 0, then its
            // tables) made a fresh registry look like another program's database.
            let (version, marker, objects, tables) = try db.transaction(.deferred) {
                (
                    try db.userVersion,
                    try db.query("PRAGMA application_id").first?[0].integer ?? 0,
                    try db.query("SELECT count(*) FROM sqlite_schema").first?[0].integer ?? 0,
                    Set(try db.query("SELECT name FROM sqlite_schema WHERE type = 'table'").compactMap { $0[0].text })
                )
            }
            let empty = version == 0 && marker == 0 && objects == 0
            let stamped = marker == Int64(sqliteApplicationID) && version > 0
            let unstamped = marker == 0 && version == 1 && tables == Self.tables
            guard empty || stamped || unstamped else {
                throw RivetDevicePairingStoreError.notARegistry.with(
                    "\(path) is an SQLite database of another program (application_id \(marker), schema version \(version)), not a Rivet pairing registry; nothing was changed")
            }
            if empty && !writable {
                throw RivetDevicePairingStoreError.notARegistry.with(
                    "\(path) is an empty database, not a Rivet pairing registry yet; nothing was changed")
            }
            if version > schemaVersion {
                throw SQLiteError.schemaTooNew(found: version, supported: schemaVersion)
            }
            try checkIntegrity(db, path: path)
            guard writable else { return version }
            try db.enableWAL()
            try db.execute("PRAGMA secure_delete = ON")
            let migrated = try db.migrate(migrations)
            if unstamped { try db.execute("PRAGMA application_id = \(sqliteApplicationID)") }
            return migrated
        } catch let error as RivetDevicePairingStoreError {
            throw error
        } catch let error as SQLiteError where error.isSchemaTooNew {
            let found = error.schemaVersions?.found ?? 0
            throw RivetDevicePairingStoreError.schemaTooNew.with(
                "the pairing registry \(path) has schema version \(found), but this program supports up to version \(schemaVersion): it was written by a newer version of Rivet. Upgrade rivetd and rivet-pair; the registry was not changed.",
                sqliteError: error)
        } catch {
            throw databaseError(error, "prepare the pairing registry \(path)")
        }
    }

    /// The most problems `quick_check` reports in the message.
    static let reportedProblems = 3

    /// Runs `PRAGMA quick_check`: a damaged page or index is `.damaged`, naming what SQLite found.
    private static func checkIntegrity(_ db: SQLiteDatabase, path: String) throws(RivetDevicePairingStoreError) {
        var problems: [String]
        do {
            problems = try db.query("PRAGMA quick_check(\(reportedProblems))").compactMap { $0[0].text }
        } catch let error as SQLiteError where error.isCorrupt {
            problems = ["\(error)"]
        } catch {
            throw databaseError(error, "check the pairing registry \(path)")
        }
        guard problems != ["ok"] else { return }
        throw RivetDevicePairingStoreError.damaged.with(
            "the pairing registry \(path) is damaged (SQLite's quick_check: \(problems.joined(separator: "; "))); nothing was changed. Restore it from a backup, or move it aside to start over (every device then pairs again)")
    }

    /// Closes the connection; later calls throw `.database`.
    public func close() {
        database.withLock { $0.close() }
    }

    // MARK: Reading

    /// Every paired device, oldest first (then by device ID). No credential or verifier is read.
    /// - Throws: `.corruptRecord` for a record that breaks the schema's rules, `.database`.
    public func list() throws(RivetDevicePairingStoreError) -> [RivetDevicePairedDevice] {
        try withDatabase("list paired devices") { db in
            try db.transaction(.deferred) {
                var scopes: [DeviceID: Set<RivetDeviceScope>] = [:]
                for row in try db.query("SELECT device_id, scope FROM device_scope") {
                    let id = try self.decodeID(row[0])
                    scopes[id, default: []].insert(try self.decodeScope(row[1], device: id))
                }
                return try db.query(
                    """
                    SELECT device_id, display_name, application_id, server_fingerprint, created_ms, last_seen_ms
                    FROM paired_device ORDER BY created_ms, device_id
                    """
                ).map { row in
                    let id = try self.decodeID(row[0])
                    return try self.decodeDevice(row, id: id, scopes: scopes[id] ?? [])
                }
            }
        }
    }

    /// The paired devices named `name` for `application`, the most recently seen (or paired)
    /// first: the namesakes of a device that asks to pair under that name, among them a
    /// reinstalled device's old record.
    /// - Throws: `.corruptRecord`, `.database`.
    public func devices(named name: RivetDeviceName, application: RivetApplicationID) throws(RivetDevicePairingStoreError)
        -> [RivetDevicePairedDevice]
    {
        try list()
            .filter { $0.displayName == name && $0.applicationID == application }
            .sorted { ($0.lastSeen ?? $0.created) > ($1.lastSeen ?? $1.created) }
    }

    /// The device with `id`, or `nil` if none is paired under it.
    /// - Throws: `.corruptRecord`, `.database`.
    public func device(_ id: DeviceID) throws(RivetDevicePairingStoreError) -> RivetDevicePairedDevice? {
        try withDatabase("read device \(id)") { db in
            try db.transaction(.deferred) { try self.read(id, db) }
        }
    }

    // MARK: Writing

    /// Stores a newly paired device with its verifier, metadata and scopes, and its `paired`
    /// history entry (by `method`; nil says how is not recorded), in one transaction.
    /// - Throws: `.deviceExists` if the ID is taken (nothing changes), `.database`.
    public func insertPaired(
        _ record: RivetDevicePairedDevice, verifier: PairingVerifier, method: RivetDevicePairingMethod? = nil
    ) throws(RivetDevicePairingStoreError) {
        try withDatabase("store paired device \(record.deviceID)") { db in
            try db.transaction(.immediate) {
                try self.insert(record, verifier: verifier, RivetDeviceEventDetail.paired(method, again: false), db)
            }
        }
    }

    /// Re-pairing confirmed: replaces a known device's verifier, metadata and scopes, and adds
    /// its `paired … again` history entry, in one transaction. Until this call the old verifier
    /// stays valid.
    /// - Throws: `.unknownDevice` if no device has the record's ID (for example it was revoked
    ///   meanwhile; nothing changes), `.database`.
    public func replaceVerifierOnRepair(
        _ record: RivetDevicePairedDevice, verifier: PairingVerifier, method: RivetDevicePairingMethod? = nil
    ) throws(RivetDevicePairingStoreError) {
        try withDatabase("replace the verifier of device \(record.deviceID)") { db in
            try db.transaction(.immediate) {
                let changed = try db.run(
                    """
                    UPDATE paired_device
                    SET display_name = ?2, application_id = ?3, server_fingerprint = ?4, created_ms = ?5,
                        last_seen_ms = ?6, verifier = ?7
                    WHERE device_id = ?1
                    """, self.bindings(record) + [.blob(verifier.bytes)])
                guard changed == 1 else { throw self.unknown(record.deviceID) }
                try self.replaceScopes(record.deviceID, record.scopes, db)
                try self.append(
                    .paired, record.deviceID, name: record.displayName,
                    RivetDeviceEventDetail.paired(method, again: true), db)
            }
        }
    }

    /// Stores a newly paired device in place of `old`, another device's record (a reinstalled
    /// device pairing anew under its name), in one transaction: the new device with its verifier
    /// and its `paired … replacing OLD` entry, `old` removed with its scopes and verifier and its
    /// `replaced` entry (by the new ID). If `old` was revoked meanwhile, the new device is stored
    /// all the same and its entry says so. Returns the removed record, or nil in that case.
    /// - Throws: `.deviceExists` if the new ID is taken, `.database`; nothing changes then.
    @discardableResult
    public func insertPaired(
        _ record: RivetDevicePairedDevice, verifier: PairingVerifier, method: RivetDevicePairingMethod? = nil,
        replacing old: DeviceID
    ) throws(RivetDevicePairingStoreError) -> RivetDevicePairedDevice? {
        try withDatabase("store paired device \(record.deviceID) in place of \(old)") { db in
            try db.transaction(.immediate) {
                let removed = try self.read(old, db)
                if removed != nil {
                    try db.run("DELETE FROM paired_device WHERE device_id = ?", [.blob(old.bytes)])
                }
                try self.insert(
                    record, verifier: verifier,
                    RivetDeviceEventDetail.paired(method, replacing: old, gone: removed == nil), db)
                if let removed {
                    try self.append(
                        .replaced, old, name: removed.displayName, RivetDeviceEventDetail.replaced(by: record.deviceID, method), db)
                }
                return removed
            }
        }
    }

    /// Stores what a finished pairing produced: `insertPaired` for a new device (in place of the
    /// record it `supersedes`, when the desktop chose to replace one), `replaceVerifierOnRepair`
    /// for a re-pairing. Returns the record it replaced and removed, if any.
    /// - Throws: as those methods.
    @discardableResult
    public func save(_ completion: RivetDevicePairingCompletion) throws(RivetDevicePairingStoreError)
        -> RivetDevicePairedDevice?
    {
        let method: RivetDevicePairingMethod = completion.byLink ? .link : .code
        if completion.isRepair {
            try replaceVerifierOnRepair(completion.record, verifier: completion.verifier, method: method)
        } else if let old = completion.supersedes {
            return try insertPaired(completion.record, verifier: completion.verifier, method: method, replacing: old.deviceID)
        } else {
            try insertPaired(completion.record, verifier: completion.verifier, method: method)
        }
        return nil
    }

    /// What a change did to a device's record.
    public struct Change: Sendable, Equatable {
        /// The record before the change.
        public let before: RivetDevicePairedDevice
        /// The record after it (equal to `before` when nothing changed).
        public let after: RivetDevicePairedDevice
        /// Whether anything changed (and so a history entry was added).
        public var changed: Bool { before != after }
    }

    /// Renames the device and adds its `renamed` history entry (old → new, by `actor`) in one
    /// transaction. The same name again changes nothing and adds no entry.
    /// - Throws: `.unknownDevice` (nothing changes), `.database`.
    public func rename(_ id: DeviceID, to name: RivetDeviceName, by actor: RivetRegistryActor)
        throws(RivetDevicePairingStoreError) -> Change
    {
        try change(id, "rename device \(id)", unchanged: { $0.displayName == name }) { before, db in
            try db.run("UPDATE paired_device SET display_name = ? WHERE device_id = ?", [.text(name.value), .blob(id.bytes)])
            try self.append(
                .renamed, id, name: name, RivetDeviceEventDetail.renamed(from: before.displayName, to: name, by: actor), db)
        }
    }

    /// Replaces the device's scopes and adds its `scopes-changed` history entry (old → new, by
    /// `actor`) in one transaction. The same set again changes nothing and adds no entry. The
    /// store does not know the schema: the caller checks that each scope is declared.
    /// - Throws: `.unknownDevice` (nothing changes), `.database`.
    public func setScopes(_ id: DeviceID, to scopes: Set<RivetDeviceScope>, by actor: RivetRegistryActor)
        throws(RivetDevicePairingStoreError) -> Change
    {
        try change(id, "change the scopes of device \(id)", unchanged: { $0.scopes == scopes }) { before, db in
            try self.replaceScopes(id, scopes, db)
            try self.append(
                .scopesChanged, id, name: before.displayName,
                RivetDeviceEventDetail.scopes(from: before.scopes, to: scopes, by: actor), db)
        }
    }

    /// Reads device `id` and, unless `unchanged` holds for it, runs `apply` (the update and its
    /// history entry) with it and reads it again, in one transaction.
    /// - Throws: `.unknownDevice` (nothing changes), `.database`.
    private func change(
        _ id: DeviceID, _ what: String, unchanged: (RivetDevicePairedDevice) -> Bool,
        _ apply: (RivetDevicePairedDevice, SQLiteDatabase) throws -> Void
    ) throws(RivetDevicePairingStoreError) -> Change {
        try withDatabase(what) { db in
            try db.transaction(.immediate) {
                guard let before = try self.read(id, db) else { throw self.unknown(id) }
                guard !unchanged(before) else { return Change(before: before, after: before) }
                try apply(before, db)
                return Change(before: before, after: try self.read(id, db) ?? before)
            }
        }
    }

    /// Records that the device authenticated at `date` (whole milliseconds).
    /// - Throws: `.unknownDevice`, `.database`.
    public func touchLastSeen(_ id: DeviceID, at date: WallClockTime) throws(RivetDevicePairingStoreError) {
        try withDatabase("update last seen of device \(id)") { db in
            try db.transaction(.immediate) {
                let changed = try db.run(
                    "UPDATE paired_device SET last_seen_ms = ? WHERE device_id = ?",
                    [.integer(date.unixMilliseconds), .blob(id.bytes)], cached: true)
                guard changed == 1 else { throw self.unknown(id) }
            }
        }
    }

    /// Removes the device, its scopes and its verifier, and adds its `revoked` history entry
    /// (by `actor`), in one committed (and, with `synchronous=FULL`, durable) transaction, and
    /// returns the removed record. The device's history stays. Use `RivetDeviceRevoker` to also
    /// close the device's sessions afterwards.
    /// - Throws: `.unknownDevice` for an ID that is not paired (nothing changes), `.database`.
    @discardableResult
    public func revoke(_ id: DeviceID, by actor: RivetRegistryActor) throws(RivetDevicePairingStoreError)
        -> RivetDevicePairedDevice
    {
        try withDatabase("revoke device \(id)") { db in
            try db.transaction(.immediate) {
                guard let record = try self.read(id, db) else { throw self.unknown(id) }
                try self.remove(record, .revoked, RivetDeviceEventDetail.revoked(by: actor), db)
                return record
            }
        }
    }

    /// Revokes every device `rule` finds due at `now` (not seen, or if never seen not paired,
    /// for more than its days) except those in `sparing` (the devices with a live session), each
    /// with its `expired` history entry, in one transaction; returns the removed records, oldest
    /// first. A device seen meanwhile is not due: the check is the transaction's own.
    /// - Throws: `.corruptRecord`, `.database` (nothing changes).
    public func expire(_ rule: RivetDeviceExpiry, at now: WallClockTime, sparing: Set<DeviceID>)
        throws(RivetDevicePairingStoreError) -> [RivetDevicePairedDevice]
    {
        try withDatabase("expire devices not seen for \(rule.days) days") { db in
            try db.transaction(.immediate) {
                let due = try db.query(
                    """
                    SELECT device_id FROM paired_device WHERE coalesce(last_seen_ms, created_ms) < ?
                    ORDER BY created_ms, device_id
                    """, [.integer(rule.cutoff(at: now).unixMilliseconds)])
                var expired: [RivetDevicePairedDevice] = []
                for row in due {
                    let id = try self.decodeID(row[0])
                    guard !sparing.contains(id), let record = try self.read(id, db) else { continue }
                    try self.remove(record, .expired, RivetDeviceEventDetail.expired(rule, record), db)
                    expired.append(record)
                }
                return expired
            }
        }
    }

    // MARK: History

    /// The history of device `id` (also after its revocation), or of every device when nil,
    /// oldest first. A schema version 1 file (opened read-only, so not migrated) keeps no
    /// history: for it this returns the entries its migration will write, one `paired` per
    /// device at its pairing time, and writes nothing (``keepsHistory`` tells the two apart).
    /// - Throws: `.corruptRecord` for an entry that breaks the schema's rules, `.database`.
    public func history(_ id: DeviceID? = nil) throws(RivetDevicePairingStoreError) -> [RivetDeviceEvent] {
        let filter = id.map { [SQLiteValue.blob($0.bytes)] } ?? []
        let condition = id == nil ? "" : "WHERE device_id = ?"
        let sql =
            keepsHistory
            ? "SELECT device_id, time_ms, kind, name, detail FROM device_event \(condition) ORDER BY event_id"
            : """
            SELECT device_id, created_ms, 'paired', display_name, '\(RivetDeviceEventDetail.beforeHistory)'
            FROM paired_device \(condition) ORDER BY created_ms, device_id
            """
        return try withDatabase("read the history\(id.map { " of device \($0)" } ?? "")") { db in
            try db.transaction(.deferred) {
                try db.query(sql, filter).map { row in try self.decodeEvent(row) }
            }
        }
    }

    /// Adds one history entry in the caller's transaction, then deletes the device's entries
    /// beyond the newest ``historyLimit``.
    private func append(
        _ kind: RivetDeviceEvent.Kind, _ id: DeviceID, name: RivetDeviceName, _ detail: String, _ db: SQLiteDatabase
    ) throws {
        var text = detail
        while text.utf8.count > Self.maximumDetailBytes { text.removeLast() }
        try db.run(
            "INSERT INTO device_event (device_id, time_ms, kind, name, detail) VALUES (?, ?, ?, ?, ?)",
            [
                .blob(id.bytes), .integer(clock.wallClockNow.unixMilliseconds), .text(kind.rawValue), .text(name.value),
                .text(text),
            ])
        try db.run(
            """
            DELETE FROM device_event WHERE device_id = ?1 AND event_id <= (
                SELECT event_id FROM device_event WHERE device_id = ?1 ORDER BY event_id DESC LIMIT 1 OFFSET ?2)
            """, [.blob(id.bytes), .integer(Int64(Self.historyLimit))])
    }

    /// Decodes columns device_id, time, kind, name, detail.
    private func decodeEvent(_ row: SQLiteRow) throws(RivetDevicePairingStoreError) -> RivetDeviceEvent {
        let id = try decodeID(row[0])
        guard let time = row[1].integer else { throw corrupt(id, "a history entry has no time") }
        guard let text = row[2].text, let kind = RivetDeviceEvent.Kind(rawValue: text) else {
            throw corrupt(id, "a history entry is of an unknown kind")
        }
        guard let stored = row[3].text, let name = try? RivetDeviceName(stored: stored) else {
            throw corrupt(id, "a history entry's name is invalid")
        }
        guard let detail = row[4].text else { throw corrupt(id, "a history entry has no detail") }
        return RivetDeviceEvent(
            deviceID: id, time: WallClockTime(unixMilliseconds: time), kind: kind, name: name, detail: detail)
    }

    // MARK: Authentication lookup

    /// What the authenticator compares, read the same way for a known and an unknown device.
    /// For an unknown device the dummy verifier and the presented application ID and
    /// fingerprint stand in (the `known` flag then fails the check); nothing else is read
    /// before the decision.
    struct AuthenticationRow {
        let known: Bool
        let verifier: [UInt8]
        let applicationID: [UInt8]
        let serverFingerprint: [UInt8]
    }

    /// One statement that does the same work whether or not `id` is paired: it reads the
    /// largest key, then the first row at or after `id` (or, past the largest key, the last
    /// row), and `known` is whether that row is `id`'s own. An unknown device so costs the same
    /// seeks and the same record decoding as a known one (looking up only `id` made an unknown
    /// device about 120 ns faster, since no record was decoded). Only an empty registry
    /// returns no row, and there every device is unknown.
    private static let authenticationLookup = """
        SELECT device_id, verifier, application_id, server_fingerprint FROM paired_device
        WHERE device_id >= min(?1, (SELECT max(device_id) FROM paired_device)) ORDER BY device_id LIMIT 1
        """

    func authenticationRow(
        for id: DeviceID, dummy: PairingVerifier, presentedApplicationID: RivetApplicationID,
        presentedFingerprint: SPKIFingerprint
    ) throws(RivetDevicePairingStoreError) -> AuthenticationRow {
        let rows = try withDatabase("look up device \(id)") { db in
            try db.query(Self.authenticationLookup, [.blob(id.bytes)], cached: true)
        }
        let row = rows.first
        let storedID = row?[0].blob ?? []
        let verifier = row?[1].blob ?? []
        let applicationID = Array((row?[2].text ?? "").utf8)
        let fingerprint = row?[3].blob ?? []
        let known = constantTimeEqual(storedID, id.bytes)
        return AuthenticationRow(
            known: known, verifier: known ? verifier : dummy.bytes,
            applicationID: known ? applicationID : Array(presentedApplicationID.value.utf8),
            serverFingerprint: known ? fingerprint : presentedFingerprint.bytes)
    }

    // MARK: Internals

    /// How many SQL statements the registry's connection compiled so far (its hot lookups are
    /// compiled once and then reused).
    var statementsCompiled: Int { database.withLock { $0.statementsCompiled } }

    /// Runs `body` on the connection; `what` (described only when it fails) names the work in
    /// the error.
    private func withDatabase<T: Sendable>(_ what: @autoclosure () -> String, _ body: (SQLiteDatabase) throws -> T)
        throws(RivetDevicePairingStoreError) -> T
    {
        do {
            return try database.withLock { db in try body(db) }
        } catch let error as RivetDevicePairingStoreError {
            throw error
        } catch {
            throw Self.databaseError(error, "\(what()) in \(path)")
        }
    }

    private static func databaseError(_ error: any Error, _ what: String) -> RivetDevicePairingStoreError {
        guard let sqlite = error as? SQLiteError else {
            return RivetDevicePairingStoreError.database.with("\(what): \(error)")
        }
        let hint = sqlite.isBusy ? " (another process held the registry's lock past the busy timeout)" : ""
        return RivetDevicePairingStoreError.database.with("\(what): \(sqlite)\(hint)", sqliteError: sqlite)
    }

    private func unknown(_ id: DeviceID) -> RivetDevicePairingStoreError {
        RivetDevicePairingStoreError.unknownDevice.with("no paired device has ID \(id) in \(path)")
    }

    private func exists(_ id: DeviceID, _ db: SQLiteDatabase) throws -> Bool {
        try db.query("SELECT 1 FROM paired_device WHERE device_id = ?", [.blob(id.bytes)]).isEmpty == false
    }

    private func read(_ id: DeviceID, _ db: SQLiteDatabase) throws -> RivetDevicePairedDevice? {
        let rows = try db.query(
            """
            SELECT device_id, display_name, application_id, server_fingerprint, created_ms, last_seen_ms
            FROM paired_device WHERE device_id = ?
            """, [.blob(id.bytes)], cached: true)
        guard let row = rows.first else { return nil }
        var scopes: Set<RivetDeviceScope> = []
        for scope in try db.query("SELECT scope FROM device_scope WHERE device_id = ?", [.blob(id.bytes)], cached: true) {
            scopes.insert(try decodeScope(scope[0], device: id))
        }
        return try decodeDevice(row, id: id, scopes: scopes)
    }

    /// Inserts a new device, its scopes and its `paired` entry (`detail`) in the caller's
    /// transaction; `.deviceExists` if its ID is taken.
    private func insert(_ record: RivetDevicePairedDevice, verifier: PairingVerifier, _ detail: String, _ db: SQLiteDatabase) throws {
        guard try exists(record.deviceID, db) == false else {
            throw RivetDevicePairingStoreError.deviceExists.with("a device with ID \(record.deviceID) is already paired in \(path)")
        }
        try db.run(
            """
            INSERT INTO paired_device
                (device_id, display_name, application_id, server_fingerprint, created_ms, last_seen_ms, verifier)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, bindings(record) + [.blob(verifier.bytes)])
        try insertScopes(record.deviceID, record.scopes, db)
        try append(.paired, record.deviceID, name: record.displayName, detail, db)
    }

    /// Deletes the device (its scopes with it) and adds its history entry `kind` in the
    /// caller's transaction.
    private func remove(
        _ record: RivetDevicePairedDevice, _ kind: RivetDeviceEvent.Kind, _ detail: String, _ db: SQLiteDatabase
    ) throws {
        try db.run("DELETE FROM paired_device WHERE device_id = ?", [.blob(record.deviceID.bytes)])
        try append(kind, record.deviceID, name: record.displayName, detail, db)
    }

    private func bindings(_ record: RivetDevicePairedDevice) -> [SQLiteValue] {
        [
            .blob(record.deviceID.bytes), .text(record.displayName.value), .text(record.applicationID.value),
            .blob(record.serverFingerprint.bytes), .integer(record.created.unixMilliseconds),
            record.lastSeen.map { .integer($0.unixMilliseconds) } ?? .null,
        ]
    }

    private func insertScopes(_ id: DeviceID, _ scopes: Set<RivetDeviceScope>, _ db: SQLiteDatabase) throws {
        let statement = try db.prepare("INSERT INTO device_scope (device_id, scope) VALUES (?, ?)")
        for scope in scopes.sorted() {
            try statement.bind([.blob(id.bytes), .text(scope.name)])
            while try statement.step() {}
        }
    }

    /// The device's scopes become `scopes`, in the caller's transaction.
    private func replaceScopes(_ id: DeviceID, _ scopes: Set<RivetDeviceScope>, _ db: SQLiteDatabase) throws {
        try db.run("DELETE FROM device_scope WHERE device_id = ?", [.blob(id.bytes)])
        try insertScopes(id, scopes, db)
    }

    private func corrupt(_ id: DeviceID?, _ what: String) -> RivetDevicePairingStoreError {
        let device = id.map { "device \($0)" } ?? "a device"
        return RivetDevicePairingStoreError.corruptRecord.with(
            "the record of \(device) in \(path) is damaged: \(what)")
    }

    private func decodeID(_ value: SQLiteValue) throws(RivetDevicePairingStoreError) -> DeviceID {
        guard let bytes = value.blob, let id = DeviceID(bytes: bytes) else {
            throw corrupt(nil, "its device ID is not 16 bytes")
        }
        return id
    }

    private func decodeScope(_ value: SQLiteValue, device id: DeviceID) throws(RivetDevicePairingStoreError)
        -> RivetDeviceScope
    {
        guard let name = value.text, let scope = try? RivetDeviceScope(name) else {
            throw corrupt(id, "a scope name is invalid")
        }
        return scope
    }

    /// Decodes columns device_id, display_name, application_id, server_fingerprint, created_ms,
    /// last_seen_ms.
    private func decodeDevice(_ row: SQLiteRow, id: DeviceID, scopes: Set<RivetDeviceScope>)
        throws(RivetDevicePairingStoreError) -> RivetDevicePairedDevice
    {
        guard let name = row[1].text, let displayName = try? RivetDeviceName(stored: name) else {
            throw corrupt(id, "its display name is invalid")
        }
        guard let application = row[2].text, let applicationID = try? RivetApplicationID(stored: application) else {
            throw corrupt(id, "its application ID is invalid")
        }
        guard let bytes = row[3].blob, let fingerprint = SPKIFingerprint(bytes: bytes) else {
            throw corrupt(id, "its server fingerprint is not 32 bytes")
        }
        guard let created = row[4].integer else { throw corrupt(id, "its creation time is missing") }
        let lastSeen: WallClockTime?
        switch row[5] {
        case .integer(let milliseconds): lastSeen = WallClockTime(unixMilliseconds: milliseconds)
        case .null: lastSeen = nil
        default: throw corrupt(id, "its last-seen time is not an integer")
        }
        return RivetDevicePairedDevice(
            deviceID: id, displayName: displayName, applicationID: applicationID, serverFingerprint: fingerprint,
            scopes: scopes, created: WallClockTime(unixMilliseconds: created), lastSeen: lastSeen)
    }
}
