/// Finding a byte in raw bytes with the standard library alone: eight bytes at a time in a
/// 64-bit word (SWAR), thirty-two per step, in place of libc's `memchr`.
public enum ByteSearch {
    /// The index of the first `byte` in `bytes[start..<end]`, or `end` when there is none (or
    /// the range is empty). `start` and `end` must lie within `bytes`.
    @inlinable
    public static func firstIndex(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        guard start < end, let base = bytes.baseAddress else { return end }
        let raw = UnsafeRawPointer(base)
        let pattern = UInt64(byte) &* 0x0101_0101_0101_0101
        var index = start
        // Four words a step: one test for 32 bytes, then the word that holds the match.
        while index + 32 <= end {
            let first = zeroBytes(word(raw, index) ^ pattern)
            let second = zeroBytes(word(raw, index + 8) ^ pattern)
            let third = zeroBytes(word(raw, index + 16) ^ pattern)
            let fourth = zeroBytes(word(raw, index + 24) ^ pattern)
            if first | second | third | fourth != 0 {
                if first != 0 { return index + first.trailingZeroBitCount / 8 }
                if second != 0 { return index + 8 + second.trailingZeroBitCount / 8 }
                if third != 0 { return index + 16 + third.trailingZeroBitCount / 8 }
                return index + 24 + fourth.trailingZeroBitCount / 8
            }
            index += 32
        }
        while index + 8 <= end {
            let found = zeroBytes(word(raw, index) ^ pattern)
            if found != 0 { return index + found.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < end {
            if base[index] == byte { return index }
            index += 1
        }
        return end
    }

    /// The eight bytes at `offset`, the first in the low bits.
    @inlinable @inline(__always)
    static func word(_ raw: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The high bit of each byte of `word` set where that byte is zero, at least for the lowest
    /// zero byte (a borrow may also mark a byte above it, never one below): the first match is
    /// the lowest set bit, the first byte in memory on a little-endian load.
    @inlinable @inline(__always)
    static func zeroBytes(_ word: UInt64) -> UInt64 {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
    }
}
