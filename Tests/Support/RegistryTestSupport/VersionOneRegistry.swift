import RivetPairing
import SQLiteKit
import Timekeeping

/// A registry as the release before history wrote it (schema version 1): its exact DDL, its
/// pragmas and its rows, made without the current store, so a migration test starts from what
/// users have on disk.
public enum VersionOneRegistry {
    /// One device row of a version 1 registry.
    public struct Device {
        public let record: RivetDevicePairedDevice
        public let verifier: PairingVerifier

        public init(_ record: RivetDevicePairedDevice, verifier: PairingVerifier) {
            self.record = record
            self.verifier = verifier
        }
    }

    /// Schema version 1's DDL, byte for byte as the version 1 store ran it.
    public static let ddl = """
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
        """

    /// Writes a version 1 registry at `path` (WAL, `secure_delete`, `user_version` 1, and the
    /// `RIVP` stamp unless `stamped` is false, as registries written before the stamp) holding
    /// `devices`.
    public static func write(_ path: String, devices: [Device], stamped: Bool = true) throws {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        try db.execute("PRAGMA secure_delete = ON")
        try db.transaction(.immediate) {
            try db.execute(ddl + (stamped ? "PRAGMA application_id = 1380537936;" : ""))
            try db.setUserVersion(1)
        }
        for device in devices {
            let record = device.record
            try db.run(
                """
                INSERT INTO paired_device
                    (device_id, display_name, application_id, server_fingerprint, created_ms, last_seen_ms, verifier)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .blob(record.deviceID.bytes), .text(record.displayName.value), .text(record.applicationID.value),
                    .blob(record.serverFingerprint.bytes), .integer(record.created.unixMilliseconds),
                    record.lastSeen.map { .integer($0.unixMilliseconds) } ?? .null, .blob(device.verifier.bytes),
                ])
            for scope in record.scopes {
                try db.run("INSERT INTO device_scope (device_id, scope) VALUES (?, ?)", [.blob(record.deviceID.bytes), .text(scope.name)])
            }
        }
    }
}
