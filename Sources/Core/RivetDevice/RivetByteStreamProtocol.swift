/// A reliable, ordered byte stream (a pipe pair, a socket, a TLS connection) that
/// ``RivetDeviceStreamTransport`` frames with RVT1.
///
/// The transport calls `read` from one task at a time and `write` from one task at a time.
public protocol RivetByteStream: Sendable {
    /// Reads at least one and at most `maxCount` bytes; an empty array means end of stream.
    /// - Throws: when reading fails.
    func read(upTo maxCount: Int) async throws -> [UInt8]

    /// Writes all of `bytes`.
    /// - Throws: when the stream is closed or writing fails (for example the peer went away).
    func write(_ bytes: [UInt8]) async throws

    /// Closes the stream; a waiting `read` returns end of stream. Idempotent.
    func close() async
}
