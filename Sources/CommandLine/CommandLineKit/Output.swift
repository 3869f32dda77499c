import CodedError
import Glibc
import Synchronization
import SystemKit

/// Thrown when the reader of the output went away (the write failed with `EPIPE`, as in
/// `tool | head -1`). ``ToolRunner`` turns it into a quiet exit with status 0.
public struct OutputClosed: Error, Hashable, Sendable, CustomStringConvertible {
    /// Creates the error.
    public init() {}

    /// A one-line explanation.
    public var description: String { "the reader of the output closed it" }
}

/// A write to an output that failed for a reason other than a closed reader, or a value that
/// could not be encoded. Equality compares the kind of failure only.
public struct OutputError: CodedError, Hashable {
    public let code: Code
    /// What failed and why.
    public let message: String

    /// The kinds of failure, what equality compares.
    public enum Code: Hashable, Sendable { case writeFailed, encodingFailed }

    /// `write(2)` failed (not with `EPIPE`, which is ``OutputClosed``).
    public static let writeFailed = OutputError(code: .writeFailed, message: "write failed")
    /// A value could not be encoded as JSON.
    public static let encodingFailed = OutputError(code: .encodingFailed, message: "JSON encoding failed")

    static func writeFailed(fileDescriptor: Int32, errno code: Int32) -> OutputError {
        OutputError(
            code: .writeFailed,
            message: "writing to file descriptor \(fileDescriptor) failed: \(String(cString: strerror(code)))")
    }

    static func encodingFailed(_ type: Any.Type, _ error: any Error) -> OutputError {
        OutputError(
            code: .encodingFailed, message: "cannot encode \(type) as JSON: \(error)")
    }
}

/// An unbuffered output on a file descriptor: every call is written with `write(2)` at once,
/// looping over partial writes and `EINTR`. Writes to the same descriptor from different
/// threads or tasks are serialized, so lines never interleave; a write blocked on a full pipe
/// holds up only writes to that descriptor (diagnostics on stderr still get through).
public struct OutputChannel: Sendable, Hashable {
    /// The descriptor written to; the channel does not own or close it.
    public let fileDescriptor: Int32

    /// A channel over `fileDescriptor`.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// File descriptor 1.
    public static let standardOutput = OutputChannel(fileDescriptor: STDOUT_FILENO)
    /// File descriptor 2.
    public static let standardError = OutputChannel(fileDescriptor: STDERR_FILENO)

    /// Writes the UTF-8 bytes of `string`.
    /// - Throws: ``OutputClosed`` on `EPIPE`; ``OutputError/writeFailed`` on any other error.
    public func write(_ string: String) throws {
        var copy = string
        try copy.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes `bytes`.
    /// - Throws: ``OutputClosed`` on `EPIPE`; ``OutputError/writeFailed`` on any other error.
    public func write(_ bytes: some Collection<UInt8>) throws {
        let written: Void? = try bytes.withContiguousStorageIfAvailable {
            try write(UnsafeRawBufferPointer($0))
        }
        if written == nil {
            try Array(bytes).withUnsafeBytes { try write($0) }
        }
    }

    private func write(_ buffer: UnsafeRawBufferPointer) throws {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        try DescriptorLocks.lock(for: fileDescriptor).mutex.withLock { _ in
            var offset = 0
            while offset < buffer.count {
                let written = retryingInterrupts { Glibc.write(fileDescriptor, base + offset, buffer.count - offset) }
                if written >= 0 {
                    offset += written
                    continue
                }
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK {
                    // A non-blocking descriptor is full: wait until the reader drains it.
                    _ = try? Poll.wait(fileDescriptor, for: Int16(POLLOUT), timeout: -1)
                    continue
                }
                if code == EPIPE { throw OutputClosed() }
                throw OutputError.writeFailed(fileDescriptor: fileDescriptor, errno: code)
            }
        }
    }
}

/// One lock per file descriptor written through ``OutputChannel``; created on first use and
/// kept for the life of the process (a tool writes to a handful of descriptors).
private enum DescriptorLocks {
    final class Lock: Sendable {
        let mutex = Mutex<Void>(())
    }

    private static let table = Mutex<[Int32: Lock]>([:])

    static func lock(for descriptor: Int32) -> Lock {
        table.withLock { table in
            if let lock = table[descriptor] { return lock }
            let lock = Lock()
            table[descriptor] = lock
            return lock
        }
    }
}

/// Plain text and bytes to standard output (fd 1), unbuffered. Use this (or ``JSONOutput``)
/// for data instead of `print`, whose global `stdout` is not concurrency-safe.
public enum StandardOutput {
    /// Writes `string` as is (add the newline yourself).
    /// - Throws: ``OutputClosed`` when stdout's reader has gone; ``OutputError`` otherwise.
    public static func write(_ string: String) throws {
        try OutputChannel.standardOutput.write(string)
    }

    /// Writes `bytes` as is.
    /// - Throws: ``OutputClosed`` when stdout's reader has gone; ``OutputError`` otherwise.
    public static func write(_ bytes: some Collection<UInt8>) throws {
        try OutputChannel.standardOutput.write(bytes)
    }
}

/// The documented JSON shape of every tool: compact, one value per line, object keys sorted by
/// their UTF-8 bytes, `/` and non-ASCII written as is, `"` `\\` and control characters escaped
/// (`\n`, `\u001f`) — byte for byte what Foundation's `JSONEncoder` writes with
/// `[.sortedKeys, .withoutEscapingSlashes]`, made with the standard library alone so a tool
/// need not link Foundation.
///
/// Values carry dates, bytes, URLs and decimals as strings of their own (ISO 8601 text,
/// Base64, ...): a Foundation `Date`, `Data`, `URL` or `Decimal` is refused with
/// ``OutputError/encodingFailed``, since its plain `Codable` form (seconds since 2001, an array
/// of byte values, an object) is not what `JSONEncoder` would have written.
public enum JSONOutput {
    /// `value` encoded as one line of JSON followed by `"\n"`.
    /// - Throws: ``OutputError/encodingFailed`` naming the type when it cannot be encoded: a
    ///   non-finite floating-point number, a Foundation `Date`, `Data`, `URL` or `Decimal`, a
    ///   top-level value that encodes nothing, arrays and objects nested 512 deep, or an error
    ///   thrown by the value's own `encode(to:)`.
    public static func line(_ value: some Encodable) throws -> String {
        var bytes: [UInt8]
        do {
            bytes = try JSONText.encode(value)
        } catch {
            throw OutputError.encodingFailed(type(of: value), error)
        }
        bytes.append(UInt8(ascii: "\n"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Encodes `value` as one line and writes it to standard output at once.
    /// - Throws: ``OutputError/encodingFailed``, ``OutputClosed`` or ``OutputError/writeFailed``.
    public static func write(_ value: some Encodable) throws {
        try OutputChannel.standardOutput.write(line(value))
    }
}

/// A JSON Lines stream: each ``write(_:)`` puts exactly one object on its own line and hands it
/// to the kernel before returning, so a reader such as `jq` sees it at once.
public struct JSONLinesWriter: Sendable {
    /// Where the lines go.
    public let channel: OutputChannel

    /// A writer to `channel` (standard output by default).
    public init(channel: OutputChannel = .standardOutput) {
        self.channel = channel
    }

    /// Writes `value` as one line.
    /// - Throws: ``OutputError/encodingFailed``, ``OutputClosed`` or ``OutputError/writeFailed``.
    public func write(_ value: some Encodable) throws {
        try channel.write(JSONOutput.line(value))
    }
}
