import CodedError
import Foundation
import RivetPairing
import Timekeeping

/// A failure of a control request: the stable code that the response's `error` member carries
/// (scripts branch on it), and a message for people.
///
/// Equality compares the code only. Codes that only a client produces (the daemon never sends
/// them): `not-running`, `connection-failed`, `timed-out`, `invalid-response`.
public struct RivetControlError: IdentifiedCodedError {
    /// The stable code, e.g. `window-closed`.
    public let code: String
    /// What happened and, where it helps, what to do.
    public let message: String

    /// An error with a code read from a response (possibly one this version does not know).
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// The same code with another message.
    public func with(_ message: String) -> Self { Self(code: code, message: message) }

    // Request errors.
    /// The line is not a JSON object, or a member has the wrong type or is missing.
    public static let malformedRequest = Self(code: "malformed-request", message: "the request is not a valid control request")
    /// The line is longer than the bound (its bytes were discarded unread).
    public static let lineTooLong = Self(code: "line-too-long", message: "the request line is too long")
    /// `op` names no operation.
    public static let unknownOperation = Self(code: "unknown-op", message: "unknown operation")
    /// A member's value is out of its domain (a device ID that is not 32 hex digits, a code that is not six digits, a scope name that breaks the naming rules).
    public static let invalidArgument = Self(code: "invalid-argument", message: "an argument is invalid")
    /// The peer is another user; the connection is closed after this response.
    public static let permissionDenied = Self(code: "permission-denied", message: "only the daemon's own user may use the control socket")
    /// The daemon already serves its maximum of control connections; this one is closed.
    public static let busy = Self(code: "busy", message: "the control socket serves too many connections; try again")
    /// `confirm` asked to replace a device that is not paired under the name and application of the device asking (not one of the attempt's `namesakes`); nothing was confirmed.
    public static let replaceRefused = Self(code: "replace-refused", message: "the device to replace is not a namesake of the device asking")
    /// `confirm` named no scope: nothing would be granted.
    public static let noScopes = Self(code: "no-scopes", message: "no scope was named, so nothing would be granted")
    /// `confirm` named a scope the schema does not declare.
    public static let unknownScope = Self(code: "unknown-scope", message: "a scope is not declared in the schema")
    /// The attempt ended before both sides confirmed (the device rejected or left, the window closed).
    public static let attemptEnded = Self(code: "attempt-ended", message: "the pairing attempt ended before both sides confirmed")
    /// `revoke`, `rename` or `set-scopes` named a device that is not paired.
    public static let unknownDevice = Self(code: "unknown-device", message: "no paired device has that ID")
    /// The registry failed.
    public static let registryFailed = Self(code: "registry-failed", message: "the pairing registry failed")

    // Pairing refusals (docs/protocol.md (pairing part)).
    /// No pairing window is open.
    public static let windowClosed = Self(code: "window-closed", message: "no pairing window is open")
    /// `open` while a window is open.
    public static let windowAlreadyOpen = Self(code: "window-already-open", message: "a pairing window is already open")
    /// There is no pending attempt to confirm or reject.
    public static let noAttempt = Self(code: "no-attempt", message: "no device is pairing")
    /// The device has not revealed its nonce yet, so there is no code to confirm.
    public static let codeNotReady = Self(code: "code-not-ready", message: "the pairing code is not known yet")
    /// The desktop already confirmed this attempt.
    public static let alreadyConfirmed = Self(code: "already-confirmed", message: "the attempt is already confirmed")
    /// The typed code differs from the server's code; this counts as a failure and ends the attempt.
    public static let codeMismatch = Self(code: "code-mismatch", message: "the code does not match")
    /// Any other refusal of the pairing coordinator (its message says which).
    public static let pairingRefused = Self(code: "pairing-refused", message: "the pairing coordinator refused the request")

    // Client-side.
    /// No daemon answers on the control socket.
    public static let notRunning = Self(code: "not-running", message: "rivetd is not running")
    /// The connection to the daemon failed.
    public static let connectionFailed = Self(code: "connection-failed", message: "the connection to rivetd failed")
    /// The daemon did not answer in time.
    public static let timedOut = Self(code: "timed-out", message: "rivetd did not answer in time")
    /// The daemon's answer is not a control response.
    public static let invalidResponse = Self(code: "invalid-response", message: "rivetd's answer is not a control response")

    /// The control error for a pairing coordinator refusal addressed to the desktop.
    public init(_ refusal: RivetDevicePairingRefusal) {
        let code: RivetControlError
        switch refusal {
        case .windowClosed, .windowExpired: code = .windowClosed
        case .windowAlreadyOpen: code = .windowAlreadyOpen
        case .noAttempt: code = .noAttempt
        case .codeNotReady: code = .codeNotReady
        case .alreadyConfirmed: code = .alreadyConfirmed
        case .codeMismatch: code = .codeMismatch
        case .notANamesake: code = .replaceRefused
        default: code = .pairingRefused
        }
        self = code.with(refusal.message)
    }

    /// The response line that carries this error.
    public var response: RivetControlJSON {
        ["ok": false, "error": .string(code), "message": .string(message)]
    }
}

/// One request of the control protocol (`docs/protocol.md (control part)`).
public enum RivetControlRequest: Sendable, Equatable {
    /// The longest wait a `pending` request may ask for (`wait_ms`): 1000 ms, so a control
    /// connection thread is never held longer than a second by one request.
    public static let maximumPendingWaitMilliseconds = 1000

    /// Opens the pairing window: for pairing by code, or with `link` for pairing by link.
    case open(link: RivetControlLinkRequest? = nil)
    /// Shows the window and the pending attempt.
    case pending
    /// `pending` that first waits, at most `waitMilliseconds` (0 to
    /// ``maximumPendingWaitMilliseconds``), until the daemon's `changes` count exceeds `after`;
    /// sent as `{"op":"pending","changed_after":N,"wait_ms":M}`.
    case pendingChanges(after: Int64, waitMilliseconds: Int)
    /// Confirms the pending attempt and grants `scopes`; `code` is the six digits the device
    /// shows (compared in constant time), or nil when the person compared the screens. With
    /// `replace`, the ID of one of the attempt's namesakes, the new device replaces it (revoked
    /// in the transaction that stores the new one), and an empty `scopes` keeps its scopes
    /// (sent as `"replace":ID`; null or absent: pair beside it).
    case confirm(code: String?, scopes: [String], replace: DeviceID? = nil)
    /// Rejects the pending attempt.
    case reject
    /// Closes the window and ends any attempt.
    case cancel
    /// Lists the open sessions.
    case sessions
    /// Revokes a device: the registry forgets it, then its sessions close.
    case revoke(DeviceID)
    /// Renames a device (sent as `{"op":"rename","device_id":…,"name":…}`).
    case rename(DeviceID, name: RivetDeviceName)
    /// Replaces a device's scopes; its live sessions hold the new ones from their next frame
    /// (sent as `{"op":"set-scopes","device_id":…,"scopes":[…]}`).
    case setScopes(DeviceID, scopes: [String])

    /// The request's `op` value.
    public var operation: String {
        switch self {
        case .open: "open"
        case .pending, .pendingChanges: "pending"
        case .confirm: "confirm"
        case .reject: "reject"
        case .cancel: "cancel"
        case .sessions: "sessions"
        case .revoke: "revoke"
        case .rename: "rename"
        case .setScopes: "set-scopes"
        }
    }

    /// The request as the JSON object sent on the wire.
    public var json: RivetControlJSON {
        switch self {
        case .confirm(let code, let scopes, let replace):
            var members: [String: RivetControlJSON] = [
                "op": "confirm", "code": code.map { .string($0) } ?? .null, "scopes": .array(scopes.map { .string($0) }),
            ]
            if let replace { members["replace"] = .string(replace.hex) }
            return .object(members)
        case .revoke(let id):
            return ["op": "revoke", "device_id": .string(id.hex)]
        case .rename(let id, let name):
            return ["op": "rename", "device_id": .string(id.hex), "name": .string(name.value)]
        case .setScopes(let id, let scopes):
            return ["op": "set-scopes", "device_id": .string(id.hex), "scopes": .array(scopes.map { .string($0) })]
        case .open(let link?):
            return ["op": "open", "link": true, "link_host": link.host.map { .string($0) } ?? .null]
        case .pendingChanges(let after, let wait):
            return ["op": "pending", "changed_after": .integer(after), "wait_ms": .integer(Int64(wait))]
        default:
            return ["op": .string(operation)]
        }
    }

    /// Reads a request object. Members other than those of the operation are ignored.
    /// - Throws: ``RivetControlError/malformedRequest`` (no `op`, a member of the wrong type),
    ///   ``RivetControlError/unknownOperation``, ``RivetControlError/invalidArgument`` (a code
    ///   that is not six digits, a device ID that is not 32 hex digits).
    public init(json: RivetControlJSON) throws(RivetControlError) {
        guard let operation = json["op"]?.string else {
            throw RivetControlError.malformedRequest.with("the request has no string member `op`")
        }
        switch operation {
        case "open":
            switch json["link"] {
            case nil, .null?, .bool(false)?: self = .open()
            case .bool(true)?:
                switch json["link_host"] {
                case nil, .null?: self = .open(link: RivetControlLinkRequest(host: nil))
                case .string(let host)?: self = .open(link: RivetControlLinkRequest(host: host))
                default: throw RivetControlError.malformedRequest.with("`link_host` must be a string or null")
                }
            default: throw RivetControlError.malformedRequest.with("`link` must be true or false")
            }
        case "pending":
            switch (json["changed_after"], json["wait_ms"]) {
            case (nil, nil), (.null?, nil), (nil, .null?), (.null?, .null?):
                self = .pending
            case (let after, let wait):
                let changedAfter: Int64
                switch after {
                case nil, .null?: changedAfter = -1
                case let value?:
                    guard let integer = value.integer else {
                        throw RivetControlError.malformedRequest.with("`changed_after` must be an integer")
                    }
                    changedAfter = integer
                }
                let milliseconds: Int64
                switch wait {
                case nil, .null?: milliseconds = 0
                case let value?:
                    guard let integer = value.integer else {
                        throw RivetControlError.malformedRequest.with("`wait_ms` must be an integer")
                    }
                    milliseconds = integer
                }
                guard (0...Int64(Self.maximumPendingWaitMilliseconds)).contains(milliseconds) else {
                    throw RivetControlError.invalidArgument.with(
                        "`wait_ms` must be 0 to \(Self.maximumPendingWaitMilliseconds) (milliseconds)")
                }
                self = .pendingChanges(after: changedAfter, waitMilliseconds: Int(milliseconds))
            }
        case "reject": self = .reject
        case "cancel": self = .cancel
        case "sessions": self = .sessions
        case "confirm":
            let code: String?
            switch json["code"] {
            case nil, .null?: code = nil
            case .string(let text)?:
                guard text.utf8.count == 6, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                    throw RivetControlError.invalidArgument.with("`code` must be six digits, as the device shows it")
                }
                code = text
            default:
                throw RivetControlError.malformedRequest.with("`code` must be a string of six digits or null")
            }
            let replace: DeviceID?
            switch json["replace"] {
            case nil, .null?: replace = nil
            case .string?: replace = try Self.deviceID(json, operation, member: "replace")
            default: throw RivetControlError.malformedRequest.with("`replace` must be a device ID or null")
            }
            self = .confirm(code: code, scopes: try Self.scopeNames(json), replace: replace)
        case "revoke":
            self = .revoke(try Self.deviceID(json, operation))
        case "rename":
            let id = try Self.deviceID(json, operation)
            guard let text = json["name"]?.string else {
                throw RivetControlError.malformedRequest.with("`rename` needs a string member `name`")
            }
            do {
                self = .rename(id, name: try RivetDeviceName(text))
            } catch {
                throw RivetControlError.invalidArgument.with("`name`: \(error.message)")
            }
        case "set-scopes":
            self = .setScopes(try Self.deviceID(json, operation), scopes: try Self.scopeNames(json))
        default:
            throw RivetControlError.unknownOperation.with(
                "unknown operation; the operations are open, pending, confirm, reject, cancel, sessions, revoke, rename, set-scopes")
        }
    }

    /// The request's `device_id` (or another member naming a device).
    private static func deviceID(_ json: RivetControlJSON, _ operation: String, member: String = "device_id")
        throws(RivetControlError) -> DeviceID
    {
        guard let text = json[member]?.string else {
            throw RivetControlError.malformedRequest.with("`\(operation)` needs a string member `\(member)`")
        }
        guard let id = DeviceID(hex: text) else {
            throw RivetControlError.invalidArgument.with("`\(member)` must be 32 hexadecimal digits")
        }
        return id
    }

    /// The request's `scopes`: an array of strings (their names are checked by the daemon).
    private static func scopeNames(_ json: RivetControlJSON) throws(RivetControlError) -> [String] {
        guard let list = json["scopes"]?.array else {
            throw RivetControlError.malformedRequest.with("`scopes` must be an array of scope names")
        }
        var scopes: [String] = []
        for item in list {
            guard let name = item.string else {
                throw RivetControlError.malformedRequest.with("`scopes` must contain only strings")
            }
            scopes.append(name)
        }
        return scopes
    }
}

/// What `open` asks for when the window is to pair by link.
public struct RivetControlLinkRequest: Sendable, Equatable {
    /// The host to put in the link, or nil for the address rivetd listens on.
    public let host: String?

    /// A link request naming `host`, or rivetd's own address.
    public init(host: String?) { self.host = host }
}

/// A session as `rivet-pair --sessions` shows it.
public struct RivetControlSessionInfo: Sendable, Equatable {
    /// The gateway's number for the session (counts up from 1 while the daemon runs).
    public let session: UInt64
    /// The device's registry record as it authenticated.
    public let device: RivetDevicePairedDevice
    /// The device's address (`host:port`).
    public let peerAddress: String
    /// When the session started.
    public let started: Date
    /// Requests waiting for the backend.
    public let pendingCalls: Int
    /// Frames queued for the device and not yet written.
    public let queuedFrames: Int
    /// Bytes of those frames.
    public let queuedBytes: Int

    /// A session's row.
    public init(
        session: UInt64, device: RivetDevicePairedDevice, peerAddress: String, started: Date, pendingCalls: Int,
        queuedFrames: Int, queuedBytes: Int
    ) {
        self.session = session
        self.device = device
        self.peerAddress = peerAddress
        self.started = started
        self.pendingCalls = pendingCalls
        self.queuedFrames = queuedFrames
        self.queuedBytes = queuedBytes
    }
}

/// The JSON shapes of the control protocol's answers.
public enum RivetControlShapes {
    /// A paired device: `device_id`, `name`, `application_id`, `server_fingerprint`, `scopes`,
    /// `created`, `last_seen` (RFC 3339 UTC or null). Never a credential or verifier.
    public static func device(_ device: RivetDevicePairedDevice) -> RivetControlJSON {
        [
            "device_id": .string(device.deviceID.hex), "name": .string(device.displayName.value),
            "application_id": .string(device.applicationID.value),
            "server_fingerprint": .string(device.serverFingerprint.hex),
            "scopes": .array(device.scopes.sorted().map { .string($0.name) }),
            "created": .string(timestamp(device.created)),
            "last_seen": device.lastSeen.map { .string(timestamp($0)) } ?? .null,
        ]
    }

    /// A session: `session`, `device_id`, `name`, `application_id`, `scopes`, `peer`, `started`,
    /// `pending_calls`, `queued_frames`, `queued_bytes`.
    public static func session(_ info: RivetControlSessionInfo) -> RivetControlJSON {
        [
            "session": .integer(Int64(info.session)), "device_id": .string(info.device.deviceID.hex),
            "name": .string(info.device.displayName.value), "application_id": .string(info.device.applicationID.value),
            "scopes": .array(info.device.scopes.sorted().map { .string($0.name) }), "peer": .string(info.peerAddress),
            "started": .string(timestamp(info.started)), "pending_calls": .integer(Int64(info.pendingCalls)),
            "queued_frames": .integer(Int64(info.queuedFrames)), "queued_bytes": .integer(Int64(info.queuedBytes)),
        ]
    }

    /// RFC 3339 in UTC with milliseconds.
    public static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    /// RFC 3339 in UTC with milliseconds, for a time rounded to whole milliseconds (a registry
    /// record's): the same text as the `Date` of those milliseconds.
    public static func timestamp(_ time: WallClockTime) -> String {
        timestamp(Date(timeIntervalSince1970: Double(time.unixMilliseconds) / 1000))
    }
}
