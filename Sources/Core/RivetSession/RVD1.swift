import RivetPairing

/// The RVD1 preface: what a device and `rivetd` say inside TLS 1.3 between the handshake and the
/// RVT1 stream (see `docs/protocol.md (RVD1 part)`).
///
/// The client's first four bytes are the magic `RVD1`; then both sides exchange messages framed
/// as `type (u8) ‖ length (u32 big-endian) ‖ body (length bytes)`. Every type has its own
/// length limit, checked as soon as the five header bytes are in, before any body byte is
/// allocated or read; no limit exceeds `maximumBodyLength`.
public enum RVD1 {
    /// `"RVD1"` (`52 56 44 31`): the first four bytes a client sends.
    public static let magic: [UInt8] = Array("RVD1".utf8)
    /// The protocol version the magic's last byte carries (`1`).
    public static let version = 1
    /// `"RVD2"` (`52 56 44 32`): the magic of a client that pairs by link. Version 2 is version 1
    /// plus `PairLinkBegin`, `PairLinkProof` and the reject reason `linkRefused`; a client sends
    /// it only to pair by link, so servers that speak only version 1 answer it with
    /// `Reject(versionUnsupported)` and every other client is unaffected.
    public static let linkMagic: [UInt8] = Array("RVD2".utf8)
    /// The versions this implementation speaks (1 and 2).
    public static let versions: ClosedRange<Int> = 1...2
    /// The bytes of a message header: type (1) and length (4).
    public static let headerLength = 5
    /// No body may be longer than this (4096 bytes); each type's own limit is smaller.
    public static let maximumBodyLength = 4096
}

/// The type byte of an RVD1 message.
public enum RVD1MessageType: UInt8, Sendable, CaseIterable {
    /// C→S, first message only: resume a paired device's session.
    case resume = 0x01
    /// C→S, first message only: begin pairing (commitment to `Nc`).
    case pairBegin = 0x02
    /// S→C: the server's nonce `Ns`.
    case pairServerNonce = 0x03
    /// C→S: the client's nonce `Nc`, opening its commitment.
    case pairReveal = 0x04
    /// C→S: the device's person confirmed the code.
    case pairConfirm = 0x05
    /// C→S: the device's person rejected the code.
    case pairReject = 0x06
    /// S→C: the device's ID, its credential and the discovery secret; ends the pairing connection.
    case pairAccepted = 0x07
    /// S→C: the device is authenticated; the RVT1 stream starts with the next byte.
    case accept = 0x08
    /// S→C: the preface failed for the given reason; the server closes the connection.
    case reject = 0x09
    /// C→S, first message only, RVD2: begin pairing by link (with `Nc`).
    case pairLinkBegin = 0x0A
    /// C→S, RVD2: the proof that the device holds the link's token, bound to this connection.
    case pairLinkProof = 0x0B

    /// The first version that defines this type: under an earlier magic it is undefined.
    public var version: Int {
        switch self {
        case .pairLinkBegin, .pairLinkProof: 2
        default: 1
        }
    }

    /// Which side may send this type.
    public var direction: RVD1Direction {
        switch self {
        case .resume, .pairBegin, .pairReveal, .pairConfirm, .pairReject, .pairLinkBegin, .pairLinkProof: .clientToServer
        case .pairServerNonce, .pairAccepted, .accept, .reject: .serverToClient
        }
    }

    /// The fewest body bytes a valid message of this type has.
    public var minimumBodyLength: Int {
        switch self {
        case .resume: 1 + 1 + DeviceID.byteCount + PairingCredential.byteCount
        case .pairBegin: 1 + 1 + 1 + 1 + 1 + RivetDevicePairingCommitment.byteCount
        case .pairLinkBegin: 1 + 1 + 1 + 1 + 1 + Nonce.byteCount
        case .pairServerNonce, .pairReveal: Nonce.byteCount
        case .pairLinkProof: RivetPairingLinkProof.byteCount
        case .pairConfirm, .pairReject, .accept: 0
        case .pairAccepted: DeviceID.byteCount + PairingCredential.byteCount + RivetDiscoverySecret.byteCount
        case .reject: 1
        }
    }

    /// The most body bytes a valid message of this type has; a header announcing more is refused
    /// before the body is read.
    public var maximumBodyLength: Int {
        switch self {
        case .resume: 1 + RivetApplicationID.maximumByteCount + DeviceID.byteCount + PairingCredential.byteCount
        case .pairBegin:
            1 + RivetApplicationID.maximumByteCount + 1 + RivetDeviceName.maximumByteCount + 1 + DeviceID.byteCount
                + RivetDevicePairingCommitment.byteCount
        case .pairLinkBegin:
            1 + RivetApplicationID.maximumByteCount + 1 + RivetDeviceName.maximumByteCount + 1 + DeviceID.byteCount
                + Nonce.byteCount
        default: minimumBodyLength
        }
    }
}

/// Who sends a message.
public enum RVD1Direction: Sendable, Equatable {
    /// The device (client) sends it; the server reads it.
    case clientToServer
    /// The server sends it; the device reads it.
    case serverToClient
}

/// The reason byte of a `Reject`. One value, `authenticationFailed`, covers every failed resume
/// (unknown device, bad credential, other application, changed server key), so the answer never
/// tells them apart.
///
/// Any byte decodes: a value this version does not name is kept as is, and a client treats it as
/// a transient refusal.
public struct RVD1RejectReason: Hashable, Sendable, CustomStringConvertible {
    /// The byte on the wire.
    public let rawValue: UInt8

    /// Wraps a reason byte (any value).
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 1: the resume was not authenticated (the only answer for any credential problem).
    public static let authenticationFailed = Self(rawValue: 1)
    /// 2: the client's magic names an RVD version this server does not speak.
    public static let versionUnsupported = Self(rawValue: 2)
    /// 3: the client sent bytes that are not a valid RVD1 message at this point.
    public static let malformed = Self(rawValue: 3)
    /// 4: no pairing window is open (never opened, expired, or cancelled).
    public static let windowClosed = Self(rawValue: 4)
    /// 5: another device is pairing right now.
    public static let attemptInProgress = Self(rawValue: 5)
    /// 6: a person rejected the pairing (on either side, or typed a different code).
    public static let rejectedByPerson = Self(rawValue: 6)
    /// 7: the pairing window closed after too many failed attempts.
    public static let tooManyFailures = Self(rawValue: 7)
    /// 8: the pairing attempt failed otherwise (commitment mismatch, message out of order).
    public static let pairingFailed = Self(rawValue: 8)
    /// 9: the server admits no further session now; try again later.
    public static let serverBusy = Self(rawValue: 9)
    /// 10: the server failed internally (for example its registry); try again later.
    public static let serverError = Self(rawValue: 10)
    /// 11 (RVD2 only): the device's proof does not match the window's link; the attempt ended
    /// and counts as a failure.
    public static let linkRefused = Self(rawValue: 11)

    /// The reasons this version names, in wire order.
    public static let known: [Self] = [
        .authenticationFailed, .versionUnsupported, .malformed, .windowClosed, .attemptInProgress,
        .rejectedByPerson, .tooManyFailures, .pairingFailed, .serverBusy, .serverError, .linkRefused,
    ]

    /// The reason a pairing refusal is sent with.
    public init(_ refusal: RivetDevicePairingRefusal) {
        switch refusal {
        case .windowClosed, .windowExpired, .cancelled, .linkRequired, .linkNotOpen: self = .windowClosed
        case .linkProofMismatch: self = .linkRefused
        case .attemptInProgress: self = .attemptInProgress
        case .rejectedByDevice, .rejectedByDesktop, .codeMismatch: self = .rejectedByPerson
        case .tooManyFailures: self = .tooManyFailures
        default: self = .pairingFailed
        }
    }

    /// The reason's name (`authenticationFailed`, …), or `reason N` for an unnamed byte.
    public var name: String {
        switch rawValue {
        case 1: "authenticationFailed"
        case 2: "versionUnsupported"
        case 3: "malformed"
        case 4: "windowClosed"
        case 5: "attemptInProgress"
        case 6: "rejectedByPerson"
        case 7: "tooManyFailures"
        case 8: "pairingFailed"
        case 9: "serverBusy"
        case 10: "serverError"
        case 11: "linkRefused"
        default: "reason \(rawValue)"
        }
    }

    /// What the reason means for a person.
    public var explanation: String {
        switch rawValue {
        case 1: "device authentication failed (the device may have been revoked; pair it again)"
        case 2: "the server does not speak this RVD protocol version"
        case 3: "the server could not read this client's preface"
        case 4: "no pairing window is open on the desktop; open one with rivet-pair and try again"
        case 5: "another device is pairing right now; try again later"
        case 6: "pairing was rejected"
        case 7: "the pairing window closed after too many failed attempts; open a new one"
        case 8: "the pairing attempt failed; try again"
        case 9: "the server admits no further session right now; try again later"
        case 10: "the server failed internally; try again later"
        case 11: "the desktop did not accept this link's proof (a wrong or old link); open a new window with rivet-pair --open --qr"
        default: "the server refused with an unknown reason (\(rawValue))"
        }
    }

    /// `name`.
    public var description: String { name }
}
