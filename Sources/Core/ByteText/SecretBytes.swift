/// Buffers that held secret bytes (keys, credentials, drawn randomness).
public enum SecretBytes {
    /// Overwrites every byte of `bytes` with zero before the buffer is released; its count stays.
    public static func wipe(_ bytes: inout [UInt8]) {
        for index in bytes.indices { bytes[index] = 0 }
    }
}
