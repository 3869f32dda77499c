import OpenSSLKit
import RivetPairing

/// `Resume`: a paired device asks to resume its session. Sent only inside a TLS connection
/// pinned to the server's key. Its text forms never show the credential.
public struct RVD1Resume: Sendable, Equatable, CustomStringConvertible {
    /// The application the device paired with.
    public let applicationID: RivetApplicationID
    /// The device's ID.
    public let deviceID: DeviceID
    /// The device's credential `K`.
    public let credential: PairingCredential

    /// Assembles the message.
    public init(applicationID: RivetApplicationID, deviceID: DeviceID, credential: PairingCredential) {
        self.applicationID = applicationID
        self.deviceID = deviceID
        self.credential = credential
    }

    /// The message a companion sends with what it stored after pairing.
    public init(_ stored: RivetCompanionCredential) {
        self.init(applicationID: stored.applicationID, deviceID: stored.deviceID, credential: stored.credential)
    }

    /// The application and device ID; the credential reads `redacted`.
    public var description: String {
        "Resume(applicationID: \(applicationID), deviceID: \(deviceID), credential: redacted)"
    }
}

/// One RVD1 message, in either direction.
public enum RVD1Message: Sendable, Equatable, CustomStringConvertible {
    /// C→S `Resume` (type 1).
    case resume(RVD1Resume)
    /// C→S `PairBegin` (type 2).
    case pairBegin(RivetDevicePairBegin)
    /// S→C `PairServerNonce` (type 3).
    case pairServerNonce(RivetDevicePairServerNonce)
    /// C→S `PairReveal` (type 4).
    case pairReveal(RivetDevicePairReveal)
    /// C→S `PairConfirm` (type 5).
    case pairConfirm
    /// C→S `PairReject` (type 6).
    case pairReject
    /// S→C `PairAccepted` (type 7).
    case pairAccepted(RivetDevicePairAccepted)
    /// S→C `Accept` (type 8): the stream begins right after it.
    case accept
    /// S→C `Reject` (type 9).
    case reject(RVD1RejectReason)
    /// C→S `PairLinkBegin` (type 10, RVD2).
    case pairLinkBegin(RivetDevicePairLinkBegin)
    /// C→S `PairLinkProof` (type 11, RVD2).
    case pairLinkProof(RivetPairingLinkProof)

    /// The message's type byte.
    public var type: RVD1MessageType {
        switch self {
        case .resume: .resume
        case .pairBegin: .pairBegin
        case .pairServerNonce: .pairServerNonce
        case .pairReveal: .pairReveal
        case .pairConfirm: .pairConfirm
        case .pairReject: .pairReject
        case .pairAccepted: .pairAccepted
        case .accept: .accept
        case .reject: .reject
        case .pairLinkBegin: .pairLinkBegin
        case .pairLinkProof: .pairLinkProof
        }
    }

    /// The body bytes (without the header).
    public var body: [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .resume(let message):
            appendString(message.applicationID.value, to: &out)
            out += message.deviceID.bytes
            out += message.credential.bytes
        case .pairBegin(let message):
            appendIdentity(message.applicationID, message.deviceName, message.existingDeviceID, to: &out)
            out += message.commitment.bytes
        case .pairLinkBegin(let message):
            appendIdentity(message.applicationID, message.deviceName, message.existingDeviceID, to: &out)
            out += message.clientNonce.bytes
        case .pairLinkProof(let proof): out = proof.bytes
        case .pairServerNonce(let message): out = message.nonce.bytes
        case .pairReveal(let message): out = message.nonce.bytes
        case .pairConfirm, .pairReject, .accept: break
        case .pairAccepted(let message):
            out += message.deviceID.bytes
            out += message.credential.bytes
            out += message.discoverySecret.bytes
        case .reject(let reason): out = [reason.rawValue]
        }
        return out
    }

    /// The whole message: `type ‖ u32be(body.count) ‖ body`.
    public var encoded: [UInt8] {
        let body = body
        let count = UInt32(body.count)
        return [type.rawValue, UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
            + body
    }

    /// Decodes the body of a message whose header announced `type` and `body.count`.
    /// - Throws: `RVD1Error.malformed` (saying which field) when the body does not parse or has
    ///   bytes left over, `.oversized` when it is longer than the type allows.
    public static func decode(type: RVD1MessageType, body: some Collection<UInt8>) throws(RVD1Error) -> RVD1Message {
        let bytes = Array(body)
        guard bytes.count <= type.maximumBodyLength else {
            throw RVD1Error.oversized.with(
                "RVD1 \(type) body of \(bytes.count) bytes exceeds its limit of \(type.maximumBodyLength)")
        }
        var cursor = Cursor(bytes: bytes, type: type)
        let message: RVD1Message
        switch type {
        case .resume:
            let applicationID = try cursor.applicationID()
            let deviceID = DeviceID(bytes: try cursor.take(DeviceID.byteCount, "deviceID"))!
            let credential = PairingCredential(bytes: try cursor.take(PairingCredential.byteCount, "credential"))!
            message = .resume(RVD1Resume(applicationID: applicationID, deviceID: deviceID, credential: credential))
        case .pairBegin:
            let (applicationID, deviceName, existing) = try cursor.identity()
            let commitment = RivetDevicePairingCommitment(
                bytes: try cursor.take(RivetDevicePairingCommitment.byteCount, "commitment"))!
            message = .pairBegin(
                RivetDevicePairBegin(
                    applicationID: applicationID, deviceName: deviceName, existingDeviceID: existing,
                    commitment: commitment))
        case .pairServerNonce:
            message = .pairServerNonce(RivetDevicePairServerNonce(nonce: Nonce(bytes: try cursor.take(32, "Ns"))!))
        case .pairReveal:
            message = .pairReveal(RivetDevicePairReveal(nonce: Nonce(bytes: try cursor.take(32, "Nc"))!))
        case .pairConfirm: message = .pairConfirm
        case .pairReject: message = .pairReject
        case .pairAccepted:
            let deviceID = DeviceID(bytes: try cursor.take(DeviceID.byteCount, "deviceID"))!
            let credential = PairingCredential(bytes: try cursor.take(PairingCredential.byteCount, "credential"))!
            let discoverySecret = RivetDiscoverySecret(
                bytes: try cursor.take(RivetDiscoverySecret.byteCount, "discoverySecret"))!
            message = .pairAccepted(
                RivetDevicePairAccepted(deviceID: deviceID, credential: credential, discoverySecret: discoverySecret))
        case .accept: message = .accept
        case .reject: message = .reject(RVD1RejectReason(rawValue: try cursor.byte("reason")))
        case .pairLinkBegin:
            let (applicationID, deviceName, existing) = try cursor.identity()
            let nonce = Nonce(bytes: try cursor.take(Nonce.byteCount, "Nc"))!
            message = .pairLinkBegin(
                RivetDevicePairLinkBegin(
                    applicationID: applicationID, deviceName: deviceName, existingDeviceID: existing, clientNonce: nonce))
        case .pairLinkProof:
            message = .pairLinkProof(RivetPairingLinkProof(bytes: try cursor.take(RivetPairingLinkProof.byteCount, "proof"))!)
        }
        try cursor.finish()
        return message
    }

    /// The type and its fields; credentials read `redacted`, nonces are shown (they are public
    /// on the wire once sent).
    public var description: String {
        switch self {
        case .resume(let message): message.description
        case .pairBegin(let message):
            "PairBegin(applicationID: \(message.applicationID), deviceName: \(message.deviceName), existingDeviceID: \(message.existingDeviceID.map(\.description) ?? "none"), commitment: \(message.commitment))"
        case .pairServerNonce(let message): "PairServerNonce(\(message.nonce))"
        case .pairReveal(let message): "PairReveal(\(message.nonce))"
        case .pairConfirm: "PairConfirm"
        case .pairReject: "PairReject"
        case .pairAccepted(let message): message.description
        case .accept: "Accept"
        case .reject(let reason): "Reject(\(reason))"
        case .pairLinkBegin(let message):
            "PairLinkBegin(applicationID: \(message.applicationID), deviceName: \(message.deviceName), existingDeviceID: \(message.existingDeviceID.map(\.description) ?? "none"), Nc: \(message.clientNonce))"
        case .pairLinkProof(let proof): "PairLinkProof(\(proof))"
        }
    }
}

/// Appends what `PairBegin` and `PairLinkBegin` start with: the application ID, the device's
/// name, and the flag with the existing device ID.
private func appendIdentity(
    _ applicationID: RivetApplicationID, _ deviceName: RivetDeviceName, _ existing: DeviceID?, to out: inout [UInt8]
) {
    appendString(applicationID.value, to: &out)
    appendString(deviceName.value, to: &out)
    if let existing {
        out.append(1)
        out += existing.bytes
    } else {
        out.append(0)
    }
}

/// Appends `u8(len) ‖ utf8`; callers pass validated text of at most 255 bytes.
private func appendString(_ text: String, to out: inout [UInt8]) {
    let utf8 = Array(text.utf8)
    precondition(utf8.count <= 255, "RVD1 strings are at most 255 bytes")
    out.append(UInt8(utf8.count))
    out += utf8
}

/// Reads a body front to back, refusing short fields and leftovers.
private struct Cursor {
    let bytes: [UInt8]
    let type: RVD1MessageType
    var offset = 0

    mutating func take(_ count: Int, _ field: String) throws(RVD1Error) -> ArraySlice<UInt8> {
        guard bytes.count - offset >= count else {
            throw failure("\(field) needs \(count) bytes, only \(bytes.count - offset) left")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func byte(_ field: String) throws(RVD1Error) -> UInt8 {
        try take(1, field).first!
    }

    mutating func string(_ field: String, maximum: Int) throws(RVD1Error) -> String {
        let count = Int(try byte("\(field) length"))
        guard count >= 1, count <= maximum else {
            throw failure("\(field) length is \(count), not 1...\(maximum)")
        }
        guard let text = String(validating: try take(count, field), as: UTF8.self) else {
            throw failure("\(field) is not valid UTF-8")
        }
        return text
    }

    mutating func applicationID() throws(RVD1Error) -> RivetApplicationID {
        let text = try string("applicationID", maximum: RivetApplicationID.maximumByteCount)
        do { return try RivetApplicationID(text) } catch { throw failure("applicationID holds a control, format or separator character") }
    }

    mutating func deviceName() throws(RVD1Error) -> RivetDeviceName {
        let text = try string("deviceName", maximum: RivetDeviceName.maximumByteCount)
        do { return try RivetDeviceName(text) } catch { throw failure("deviceName holds a control, format or separator character") }
    }

    /// The application ID, device name and optional existing device ID that start `PairBegin`
    /// and `PairLinkBegin`.
    mutating func identity() throws(RVD1Error) -> (RivetApplicationID, RivetDeviceName, DeviceID?) {
        let applicationID = try applicationID()
        let deviceName = try deviceName()
        switch try byte("existingDeviceID flag") {
        case 0: return (applicationID, deviceName, nil)
        case 1: return (applicationID, deviceName, DeviceID(bytes: try take(DeviceID.byteCount, "existingDeviceID"))!)
        case let flag: throw failure("existingDeviceID flag is \(flag), not 0 or 1")
        }
    }

    func finish() throws(RVD1Error) {
        guard offset == bytes.count else { throw failure("\(bytes.count - offset) bytes left over after the last field") }
    }

    func failure(_ detail: String) -> RVD1Error {
        RVD1Error.malformed.with("malformed RVD1 \(type) message: \(detail)")
    }
}
