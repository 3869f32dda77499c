import ByteText

/// Reads RVD1 messages from a byte stream without ever taking a byte past the message it is
/// reading.
///
/// `bytesNeeded` says exactly how many more bytes finish the current piece (the client's magic,
/// a header, or a body). A transport reads at most that many bytes and passes them to
/// `consume(_:)`, so whatever the peer sent after its last preface message (the pipelined
/// stream) stays unread in the transport for the stream's owner. `consume` itself takes at most
/// `bytesNeeded` bytes of what it is given and reports how many it took.
///
/// Limits are checked before allocation: a header is judged (type known, sent by the right side,
/// length within its type's limit) as soon as its five bytes are in, and only then is space for
/// the body reserved. After an error the reader is failed and every later call throws it again.
public struct RVD1Reader: Sendable {
    private enum Stage: Sendable {
        case magic
        case header
        case body(RVD1MessageType, length: Int)
        case failed(RVD1Error)
    }

    /// The side whose messages this reader reads.
    public let direction: RVD1Direction
    /// The RVD version in use: the one the client's magic named once it is read (a server's
    /// reader), the newest for a client's reader. A type from a later version is undefined.
    public private(set) var version: Int
    private var stage: Stage
    private var piece: [UInt8] = []

    /// A reader for what `direction`'s sender says. A server reads `.clientToServer` (starting
    /// with the magic); a client reads `.serverToClient`.
    public init(reading direction: RVD1Direction) {
        self.direction = direction
        stage = direction == .clientToServer ? .magic : .header
        version = RVD1.versions.upperBound
        piece.reserveCapacity(RVD1.headerLength)
    }

    /// How many more bytes complete the current piece; 0 once the reader has failed.
    public var bytesNeeded: Int {
        switch stage {
        case .magic: RVD1.magic.count - piece.count
        case .header: RVD1.headerLength - piece.count
        case .body(_, let length): length - piece.count
        case .failed: 0
        }
    }

    /// True between messages (nothing of a next message read yet), including before the first
    /// byte: where a peer may legitimately stop.
    public var isAtMessageBoundary: Bool {
        switch stage {
        case .magic, .header: piece.isEmpty
        case .body, .failed: false
        }
    }

    /// Takes at most `bytesNeeded` of `bytes` and returns how many it took and the message they
    /// completed, if any. Feed the rest again (after handling the message) or leave it.
    /// - Throws: `RVD1Error.badMagic` or `.unsupportedVersion` for a wrong magic,
    ///   `.unknownMessageType`, `.wrongDirection`, `.oversized` for a bad header (before any body
    ///   byte is taken), `.malformed` for a body that does not parse; and the first error again
    ///   on every call after one.
    public mutating func consume(_ bytes: some Collection<UInt8>) throws(RVD1Error) -> (consumed: Int, message: RVD1Message?) {
        if case .failed(let error) = stage { throw error }
        let taken = Swift.min(bytesNeeded, bytes.count)
        piece.append(contentsOf: bytes.prefix(taken))
        guard bytesNeeded == 0 else { return (taken, nil) }
        do throws(RVD1Error) {
            return (taken, try completePiece())
        } catch {
            stage = .failed(error)
            piece = []
            throw error
        }
    }

    /// Records that the input ended here.
    /// - Throws: `RVD1Error.truncated` unless the reader is at a message boundary (a peer may
    ///   close between messages, not inside one).
    public mutating func finish() throws(RVD1Error) {
        if case .failed(let error) = stage { throw error }
        guard isAtMessageBoundary else {
            let error = RVD1Error.truncated.with(
                "the connection ended in the middle of the RVD1 preface (\(piece.count) bytes of a piece of \(piece.count + bytesNeeded))")
            stage = .failed(error)
            throw error
        }
    }

    private mutating func completePiece() throws(RVD1Error) -> RVD1Message? {
        switch stage {
        case .magic:
            version = try Self.checkMagic(piece)
            piece.removeAll(keepingCapacity: true)
            stage = .header
            return nil
        case .header:
            let (type, length) = try Self.checkHeader(piece, direction: direction, version: version)
            piece = []
            if length == 0 {
                stage = .header
                piece.reserveCapacity(RVD1.headerLength)
                return try RVD1Message.decode(type: type, body: EmptyCollection())
            }
            piece.reserveCapacity(length)
            stage = .body(type, length: length)
            return nil
        case .body(let type, _):
            let body = piece
            piece = []
            piece.reserveCapacity(RVD1.headerLength)
            stage = .header
            return try RVD1Message.decode(type: type, body: body)
        case .failed(let error):
            throw error
        }
    }

    /// Checks the client's four magic bytes and returns the version they name.
    /// - Throws: `RVD1Error.unsupportedVersion` for `RVD` and a digit other than 1 or 2,
    ///   `.badMagic` for anything else.
    public static func checkMagic(_ bytes: [UInt8]) throws(RVD1Error) -> Int {
        if bytes == RVD1.magic { return 1 }
        if bytes == RVD1.linkMagic { return 2 }
        if bytes.count == 4, bytes.prefix(3).elementsEqual("RVD".utf8), (0x30...0x39).contains(bytes[3]) {
            throw RVD1Error.unsupportedVersion.with(
                "the client speaks RVD\(Character(Unicode.Scalar(bytes[3]))); this server speaks RVD1 and RVD2")
        }
        throw RVD1Error.badMagic.with(
            "the connection starts with \(hex(bytes)), not the RVD1 magic 52564431 (\"RVD1\")")
    }

    /// Checks a five-byte header: the type is defined in `version` and sent by `direction`'s
    /// sender, and the length is within the type's limits.
    /// - Throws: `RVD1Error.unknownMessageType`, `.wrongDirection`, `.oversized` (longer than the
    ///   type's maximum), `.malformed` (shorter than its minimum).
    public static func checkHeader(_ bytes: [UInt8], direction: RVD1Direction, version: Int = RVD1.versions.upperBound)
        throws(RVD1Error) -> (RVD1MessageType, Int)
    {
        precondition(bytes.count == RVD1.headerLength, "an RVD1 header is 5 bytes")
        guard let type = RVD1MessageType(rawValue: bytes[0]), type.version <= version else {
            throw RVD1Error.unknownMessageType.with("RVD1 message type 0x\(hex([bytes[0]])) is not defined")
        }
        guard type.direction == direction else {
            throw RVD1Error.wrongDirection.with(
                "RVD1 \(type) may only be sent by the \(type.direction == .clientToServer ? "client" : "server")")
        }
        let length = Int(bytes[1]) << 24 | Int(bytes[2]) << 16 | Int(bytes[3]) << 8 | Int(bytes[4])
        guard length <= type.maximumBodyLength else {
            throw RVD1Error.oversized.with(
                "RVD1 \(type) announces \(length) body bytes; its limit is \(type.maximumBodyLength)")
        }
        guard length >= type.minimumBodyLength else {
            throw RVD1Error.malformed.with(
                "RVD1 \(type) announces \(length) body bytes; it needs at least \(type.minimumBodyLength)")
        }
        return (type, length)
    }
}

private func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }
