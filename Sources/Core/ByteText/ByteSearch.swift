/// Finding a byte in raw bytes with the standard library alone, in place of libc's `memchr`:
/// sixteen bytes at a time in a `SIMD16<UInt8>`, thirty-two per step. On x86-64 a step is two
/// `pcmpeqb`, a `por` and one test of the result's two 64-bit halves (`pcmpeqd` with zero and
/// `movmskps`), then `bsf` on the half that holds the match (`objdump -d` of a release build).
/// Two habits keep it vector code: the pattern is a typed `SIMD16<UInt8>` value (a literal
/// operand, `block .== SIMD16(repeating: 10)`, makes the compiler pick a lane-by-lane loop), and
/// a mask is tested through its 64-bit halves, not with `any(_:)`, a horizontal minimum that
/// becomes a shuffle ladder or a call once two masks are combined.
public enum ByteSearch {
    /// The index of the first `byte` in `bytes[start..<end]`, or `end` when there is none (or
    /// the range is empty). `start` and `end` must lie within `bytes`. No load reads outside
    /// the range: its last bytes are searched in the block that ends at `end`, or one at a time
    /// when the whole range is shorter than a block.
    @inlinable
    public static func firstIndex(of byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Int {
        let pattern = SIMD16<UInt8>(repeating: byte)
        return search(bytes, from: start, to: end, block: { raw, offset in matches(raw, offset, pattern) }, isMatch: { $0 == byte })
    }

    /// The index of the first byte in `bytes[start..<end]` that is `byte` or `other`, or `end`
    /// when there is none: ``firstIndex(of:in:from:to:)`` for two bytes at once (one pass over
    /// the bytes, two comparisons per block).
    @inlinable
    public static func firstIndex(
        of byte: UInt8, or other: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int
    ) -> Int {
        let first = SIMD16<UInt8>(repeating: byte)
        let second = SIMD16<UInt8>(repeating: other)
        return search(
            bytes, from: start, to: end, block: { raw, offset in matches(raw, offset, first) | matches(raw, offset, second) },
            isMatch: { $0 == byte || $0 == other })
    }

    /// The one walk of both searches: `block` gives the matching lanes of the sixteen bytes at
    /// an offset (as ``matches(_:_:_:)`` does), `isMatch` tests one byte. The first block alone
    /// (a short line ends there), then two blocks a step, then one, then the block that ends at
    /// `end` (its lanes before the walk's index hold no match), or the bytes one at a time when
    /// the range is shorter than a block.
    @inlinable @inline(__always)
    static func search(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int,
        block: (UnsafeRawPointer, Int) -> SIMD2<UInt64>, isMatch: (UInt8) -> Bool
    ) -> Int {
        guard start < end, let base = bytes.baseAddress else { return end }
        let raw = UnsafeRawPointer(base)
        var index = start
        if index + 16 <= end {
            let found = block(raw, index)
            if found[0] | found[1] != 0 { return index + firstLane(found) }
            index += 16
        }
        while index + 32 <= end {
            let low = block(raw, index)
            let high = block(raw, index + 16)
            let both = low | high
            if both[0] | both[1] != 0 {
                if low[0] | low[1] != 0 { return index + firstLane(low) }
                return index + 16 + firstLane(high)
            }
            index += 32
        }
        if index + 16 <= end {
            let found = block(raw, index)
            if found[0] | found[1] != 0 { return index + firstLane(found) }
            index += 16
        }
        if end - start >= 16, index < end {
            let found = block(raw, end - 16)
            return found[0] | found[1] != 0 ? end - 16 + firstLane(found) : end
        }
        while index < end {
            if isMatch(base[index]) { return index }
            index += 1
        }
        return end
    }

    /// The lanes of the sixteen bytes at `offset` that equal `pattern`'s, as two 64-bit words of
    /// 0x00 and 0xFF bytes (the first lane in the low bits of the first word).
    @inlinable @inline(__always)
    static func matches(_ raw: UnsafeRawPointer, _ offset: Int, _ pattern: SIMD16<UInt8>) -> SIMD2<UInt64> {
        unsafeBitCast(raw.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self) .== pattern, to: SIMD2<UInt64>.self)
    }

    /// The first lane set in `halves` (lanes of 0x00 and 0xFF bytes as ``matches(_:_:_:)`` gives
    /// them, two 64-bit words, the first lane in the low bits of the first): 0 to 15, or 16 when
    /// none is set.
    @inlinable @inline(__always)
    public static func firstLane(_ halves: SIMD2<UInt64>) -> Int {
        let low = UInt64(littleEndian: halves[0])
        if low != 0 { return low.trailingZeroBitCount / 8 }
        return 8 + UInt64(littleEndian: halves[1]).trailingZeroBitCount / 8
    }
}
