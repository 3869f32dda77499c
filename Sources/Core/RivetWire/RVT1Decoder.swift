/// An incremental RVT1 decoder: feed it byte chunks of any size as they arrive and take the
/// complete frames out.
///
/// Every header field is checked as soon as its bytes are present: a wrong magic fails on its
/// first differing byte, and a name or payload length above the bound fails as soon as the
/// length is read, before any byte of that body is awaited or buffered. After a failure the
/// decoder is spent: every later ``next()`` throws the same error, and the stream must be
/// closed (`docs/protocol.md`, "Receiver obligations").
public struct RVT1Decoder: Sendable {
    /// The bounds incoming frames must respect.
    public let limits: RVT1Limits

    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: RVT1Error?

    /// Creates a decoder enforcing `limits`.
    public init(limits: RVT1Limits = .default) { self.limits = limits }

    /// Bytes received but not yet returned as part of a frame.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Appends received bytes. Call ``next()`` until it returns `nil` afterwards.
    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next complete frame, or `nil` when more bytes are needed.
    /// - Throws: ``RVT1Error`` when the buffered bytes break the format; the same error again on
    ///   every later call.
    public mutating func next() throws(RVT1Error) -> RVT1Frame? {
        if let failure { throw failure }
        do {
            let frame = try decodeOne()
            compact()
            return frame
        } catch {
            failure = error
            buffer = []
            start = 0
            throw error
        }
    }

    /// Declares the end of the stream.
    /// - Throws: ``RVT1Error/truncated`` when an unfinished frame is buffered, or the earlier
    ///   failure if the decoder already failed.
    public func finish() throws(RVT1Error) {
        if let failure { throw failure }
        if bufferedByteCount > 0 { throw .truncated(buffered: bufferedByteCount) }
    }

    private mutating func decodeOne() throws(RVT1Error) -> RVT1Frame? {
        let available = buffer.count - start
        let magicBytes = min(available, RVT1.magic.count)
        for offset in 0..<magicBytes {
            let byte = buffer[start + offset]
            if byte != RVT1.magic[offset] {
                if offset == 3, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                    throw .unsupportedVersion(byte)
                }
                throw .badMagic(byte, at: offset)
            }
        }
        if available < 5 { return nil }
        guard let kind = RVT1FrameKind(rawValue: buffer[start + 4]) else {
            throw .unknownKind(buffer[start + 4])
        }
        if available < 6 { return nil }
        let flags = buffer[start + 5]
        if flags != 0 { throw .reservedFlags(flags) }
        if available < 8 { return nil }
        let nameLength = Int(readBigEndian(UInt16.self, at: start + 6))
        if nameLength > RVT1.maxNameBytes { throw .nameTooLong(nameLength) }
        if available < RVT1.headerSize { return nil }
        let requestID = RVT1RequestID(readBigEndian(UInt64.self, at: start + 8))
        let payloadLength = readBigEndian(UInt32.self, at: start + 16)
        try RVT1Frame.validateHeader(
            kind: kind, requestID: requestID, nameLength: nameLength,
            payloadLength: UInt64(payloadLength), limits: limits)

        let nameStart = start + RVT1.headerSize
        let nameEnd = nameStart + nameLength
        if buffer.count >= nameEnd {
            if let bad = buffer[nameStart..<nameEnd].first(where: { !RVT1.isNameByte($0) }) {
                throw .invalidName(byte: bad)
            }
        }
        let frameEnd = nameEnd + Int(payloadLength)
        if buffer.count < frameEnd { return nil }

        // Name bytes are ASCII (checked above), so this decoding cannot fail or alter them.
        let name = String(decoding: buffer[nameStart..<nameEnd], as: UTF8.self)
        let payload = Array(buffer[nameEnd..<frameEnd])
        if kind == .error, String(validating: payload, as: UTF8.self) == nil {
            throw .invalidMessage
        }
        start = frameEnd
        return RVT1Frame(kind: kind, requestID: requestID, name: name, payload: payload)
    }

    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            start = 0
        } else if start >= 1 << 16 {
            buffer.removeFirst(start)
            start = 0
        }
    }

    private func readBigEndian<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size {
            value = value << 8 | T(buffer[offset + index])
        }
        return value
    }
}

/// An ``RVT1Decoder`` that also enforces the stream rules: the first frame must be hello, and
/// no hello may follow. It consumes the peer's hello (see ``peerSoftware``) and returns every
/// other frame.
public struct RVT1StreamDecoder: Sendable {
    private var decoder: RVT1Decoder
    private var failure: RVT1Error?

    /// The software name from the peer's hello; `nil` until the hello has arrived.
    public private(set) var peerSoftware: String?

    /// Creates a stream decoder enforcing `limits`.
    public init(limits: RVT1Limits = .default) { decoder = RVT1Decoder(limits: limits) }

    /// Bytes received but not yet returned as part of a frame.
    public var bufferedByteCount: Int { decoder.bufferedByteCount }

    /// Appends received bytes.
    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        decoder.append(bytes)
    }

    /// Returns the next complete frame other than the opening hello, or `nil` when more bytes
    /// are needed.
    /// - Throws: ``RVT1Error``, including ``RVT1Error/missingHello`` and
    ///   ``RVT1Error/unexpectedHello``; the same error again on every later call.
    public mutating func next() throws(RVT1Error) -> RVT1Frame? {
        if let failure { throw failure }
        do throws(RVT1Error) {
            while let frame = try decoder.next() {
                if peerSoftware == nil {
                    guard frame.kind == .hello else { throw RVT1Error.missingHello(frame.kind) }
                    peerSoftware = frame.name
                    continue
                }
                if frame.kind == .hello { throw RVT1Error.unexpectedHello }
                return frame
            }
            return nil
        } catch {
            failure = error
            throw error
        }
    }

    /// Declares the end of the stream.
    /// - Throws: ``RVT1Error/truncated`` when an unfinished frame is buffered, or an earlier failure.
    public func finish() throws(RVT1Error) {
        if let failure { throw failure }
        try decoder.finish()
    }
}
