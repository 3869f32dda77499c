import CommandLineKit
import Rastrillo
import RastrilloStreams
import Synchronization

/// Standard output of rastrillo-stream: JSON Lines (or raw lines with `--raw`), shapes
/// documented in rastrillo-stream(1), keys sorted. Event lines gather in a buffer that is
/// written whenever the stream has no more bytes at hand (``flush()``), so each event reaches
/// the reader before the tool waits for the network again; every other line is written at once.
/// Lines are whole on every write: an interrupted run never leaves half a line.
final class StreamOutput: Sendable {
    private struct State: ~Copyable {
        var buffer = ByteBuffer()
        var offline = false
    }

    private let state = Mutex(State())
    private let channel = OutputChannel.standardOutput
    /// Write the buffer at once past this many bytes, so memory stays bounded.
    private static let flushThreshold = 1 << 16

    /// One event: `{"data":…,"event":…,"id":…|null,"type":"event"}`, from the bytes of its
    /// fields as received (not UTF-8 sequences become U+FFFD, as `String(decoding:as:)` does).
    func event(
        type: UnsafeBufferPointer<UInt8>, data: UnsafeBufferPointer<UInt8>, id: UnsafeBufferPointer<UInt8>
    ) throws {
        try append { line in
            JSONText.append(#"{"data":""#, to: &line)
            JSONText.appendDecodingContent(data, to: &line)
            JSONText.append(#"","event":""#, to: &line)
            JSONText.appendDecodingContent(type, to: &line)
            if id.isEmpty {
                JSONText.append(#"","id":null,"type":"event"}"#, to: &line)
            } else {
                JSONText.append(#"","id":""#, to: &line)
                JSONText.appendDecodingContent(id, to: &line)
                JSONText.append(#"","type":"event"}"#, to: &line)
            }
            line.append(0x0A)
        }
    }

    /// One raw line of the stream, from its bytes as received (not UTF-8 sequences become
    /// U+FFFD, as `String(decoding:as:)` does).
    func raw(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        try append { line in
            if JSONText.isASCII(bytes) {
                line.append(bytes)
            } else {
                var text = String(decoding: bytes, as: UTF8.self)
                text.withUTF8 { line.append($0) }
            }
            line.append(0x0A)
        }
    }

    /// `{"status":200,"type":"open"}`.
    func open(status: Int) throws {
        try immediate(#"{"status":\#(status),"type":"open"}"#)
    }

    /// `{"body":…,"body_encoding":"utf8"|"base64","status":N,"type":"snapshot"}`.
    func snapshot(_ response: NativeResponse) throws {
        var line = ByteBuffer()
        JSONText.append(#"{"body":"#, to: &line)
        if let text = String(validating: response.body, as: UTF8.self) {
            JSONText.appendString(text, to: &line)
            JSONText.append(#","body_encoding":"utf8""#, to: &line)
        } else {
            JSONText.appendString(JSONText.base64(response.body), to: &line)
            JSONText.append(#","body_encoding":"base64""#, to: &line)
        }
        JSONText.appendString(#","status":\#(response.status),"type":"snapshot"}"#, quoted: false, to: &line)
        try immediate(line.string)
    }

    /// `{"reason":…,"type":"reconnect","wait_seconds":S}`.
    func reconnect(wait: Duration, reason: String) throws {
        let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
        let rounded = (seconds * 1000).rounded() / 1000
        var line = ByteBuffer()
        JSONText.append(#"{"reason":"#, to: &line)
        JSONText.appendString(reason, to: &line)
        JSONText.appendString(#","type":"reconnect","wait_seconds":\#(rounded)}"#, quoted: false, to: &line)
        try immediate(line.string)
    }

    /// `{"type":"offline"}` or `{"type":"online"}` when reachability changed since the last
    /// such line (the run starts as online, printing nothing).
    func reachability(offline: Bool, json: Bool) throws {
        let changed = state.withLock { state -> Bool in
            defer { state.offline = offline }
            return state.offline != offline
        }
        guard changed, json else { return }
        try immediate(offline ? #"{"type":"offline"}"# : #"{"type":"online"}"#)
    }

    /// Writes the buffered event lines.
    func flush() throws {
        try state.withLock { state in
            guard !state.buffer.isEmpty else { return }
            defer { state.buffer.removeAll(keepingCapacity: Self.flushThreshold * 2) }
            try state.buffer.withBytes { try channel.write($0) }
        }
    }

    /// Drops buffered event lines (an ending connection's unflushed lines are still whole
    /// events, but a run that is being interrupted prints nothing more).
    func discard() {
        state.withLock { $0.buffer.removeAll(keepingCapacity: 0) }
    }

    private func append(_ build: (inout ByteBuffer) -> Void) throws {
        try state.withLock { state in
            build(&state.buffer)
            if state.buffer.count >= Self.flushThreshold {
                defer { state.buffer.removeAll(keepingCapacity: Self.flushThreshold * 2) }
                try state.buffer.withBytes { try channel.write($0) }
            }
        }
    }

    private func immediate(_ line: String) throws {
        try state.withLock { state in
            if !state.buffer.isEmpty {
                defer { state.buffer.removeAll(keepingCapacity: Self.flushThreshold * 2) }
                try state.buffer.withBytes { try channel.write($0) }
            }
            try channel.write(line + "\n")
        }
    }
}

/// JSON text pieces (RFC 8259) written straight into bytes.
enum JSONText {
    private static let hex = Array("0123456789abcdef".utf8)

    /// `text` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\r`, `\t` or
    /// `\u00XX`, everything else (slashes, non-ASCII) as is.
    static func appendString(_ text: String, quoted: Bool = true, to output: inout ByteBuffer) {
        var text = text
        text.withUTF8 { bytes in
            if !quoted {
                output.append(bytes)
                return
            }
            output.append(0x22)
            _ = appendEscaped(bytes, to: &output, stopAtNonASCII: false)
            output.append(0x22)
        }
    }

    /// The bytes as a JSON string, as ``appendString(_:to:)`` writes `String(decoding: bytes,
    /// as: UTF8.self)`: ASCII is escaped straight from the bytes, anything else is decoded first
    /// so a sequence that is not UTF-8 becomes U+FFFD.
    static func appendDecoding(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout ByteBuffer) {
        output.append(0x22)
        appendDecodingContent(bytes, to: &output)
        output.append(0x22)
    }

    /// What ``appendDecoding(_:to:)`` writes between the quotes.
    static func appendDecodingContent(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout ByteBuffer) {
        let start = output.count
        if !appendEscaped(bytes, to: &output, stopAtNonASCII: true) {
            output.truncate(to: start)
            var text = String(decoding: bytes, as: UTF8.self)
            text.withUTF8 { _ = appendEscaped($0, to: &output, stopAtNonASCII: false) }
        }
    }

    /// Literal text, as is.
    @inline(__always)
    static func append(_ text: StaticString, to output: inout ByteBuffer) {
        text.withUTF8Buffer { output.append($0) }
    }

    /// True when every byte is ASCII.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var any: UInt8 = 0
        for byte in bytes { any |= byte }
        return any < 0x80
    }

    /// Escapes `bytes` into `output` (no quotes); false, with part written, when
    /// `stopAtNonASCII` and a byte is not ASCII.
    private static func appendEscaped(
        _ bytes: UnsafeBufferPointer<UInt8>, to output: inout ByteBuffer, stopAtNonASCII: Bool
    ) -> Bool {
        var start = 0
        var index = 0
        let count = bytes.count
        let raw = UnsafeRawPointer(bytes.baseAddress)
        while index < count {
            if let raw {
                var word: UInt64
                if index + 8 <= count {
                    word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                } else {
                    // The last bytes, padded with "a" (which needs nothing).
                    word = 0x6161_6161_6161_6161
                    withUnsafeMutableBytes(of: &word) { $0.baseAddress!.copyMemory(from: raw + index, byteCount: count - index) }
                }
                if !needsAttention(word) {
                    index = min(index + 8, count)
                    continue
                }
            }
            let byte = bytes[index]
            index += 1
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C || (byte >= 0x80 && stopAtNonASCII) else { continue }
            if byte >= 0x80 { return false }
            if index - 1 > start { output.append(UnsafeBufferPointer(rebasing: bytes[start..<index - 1])) }
            start = index
            switch byte {
            case 0x22: output.append(0x5C, 0x22)
            case 0x5C: output.append(0x5C, 0x5C)
            case 0x0A: output.append(0x5C, UInt8(ascii: "n"))
            case 0x0D: output.append(0x5C, UInt8(ascii: "r"))
            case 0x09: output.append(0x5C, UInt8(ascii: "t"))
            default:
                output.append(0x5C, UInt8(ascii: "u"))
                output.append(0x30, 0x30)
                output.append(hex[Int(byte >> 4)], hex[Int(byte & 15)])
            }
        }
        if bytes.count > start { output.append(UnsafeBufferPointer(rebasing: bytes[start..<bytes.count])) }
        return true
    }

    /// True when a byte of `word` may need escaping or decoding: below 0x20, `"`, `\`, or not
    /// ASCII (never false for such a byte).
    @inline(__always)
    private static func needsAttention(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let below20 = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let isQuote = (quote &- ones) & ~quote & highs
        let isBackslash = (backslash &- ones) & ~backslash & highs
        return (below20 | isQuote | isBackslash | (word & highs)) != 0
    }

    /// Standard Base64 (RFC 4648 §4) with padding.
    static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output = [UInt8]()
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            var value = UInt32(bytes[index]) << 16
            if count > 1 { value |= UInt32(bytes[index + 1]) << 8 }
            if count > 2 { value |= UInt32(bytes[index + 2]) }
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(count > 1 ? alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "="))
            output.append(count > 2 ? alphabet[Int(value & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// A growable byte buffer written with plain copies: the output side's hot path appends
/// several small pieces per event, where `Array`'s per-call checks cost more than the copy.
struct ByteBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written.
    private(set) var count = 0

    /// An empty buffer.
    init() {
        capacity = 256
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    var isEmpty: Bool { count == 0 }

    /// The bytes as UTF-8 text.
    var string: String { String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self) }

    /// Runs `body` over the bytes written.
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(count + more) }
    }

    private mutating func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    /// Drops the bytes from `newCount` on.
    mutating func truncate(to newCount: Int) {
        count = min(count, newCount)
    }

    /// Empties the buffer; frees its storage when it grew past `keptCapacity`.
    mutating func removeAll(keepingCapacity keptCapacity: Int) {
        count = 0
        if capacity > max(keptCapacity, 256) {
            base.deallocate()
            capacity = 256
            base = .allocate(capacity: capacity)
        }
    }
}
