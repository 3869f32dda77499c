import Testing

import ByteText

@Suite struct ByteSearchTests {
    private func search(_ byte: UInt8, _ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) -> Int {
        bytes.withUnsafeBufferPointer { ByteSearch.firstIndex(of: byte, in: $0, from: start, to: end ?? bytes.count) }
    }

    @Test func findsTheFirstMatchAtEveryPositionAndLength() {
        // Every length through three 16-byte steps, a word and a tail; every position of the
        // match, with a second match after it that must not win.
        for length in 1...41 {
            for position in 0..<length {
                var bytes = [UInt8](repeating: 0x41, count: length)
                bytes[position] = 0x0A
                if position + 1 < length { bytes[length - 1] = 0x0A }
                #expect(search(0x0A, bytes) == position, "length \(length), position \(position)")
            }
            #expect(search(0x0A, [UInt8](repeating: 0x41, count: length)) == length)
        }
    }

    @Test func keepsToItsRange() {
        let bytes = Array("a\nbcdefghijklmnopqrstuvwxyz\n0123\n".utf8)
        #expect(search(0x0A, bytes, from: 2) == 27)
        #expect(search(0x0A, bytes, from: 2, to: 27) == 27)  // `end` when the range holds none
        #expect(search(0x0A, bytes, from: 28, to: 33) == 32)
        #expect(search(0x0A, bytes, from: 5, to: 5) == 5)  // an empty range
        #expect(search(0x0A, [], from: 0, to: 0) == 0)
    }

    /// The word test flags a byte above a match through the borrow, never one below: bytes
    /// just above and below the searched one, zero and 0xFF around it do not fool it.
    @Test func agreesWithABytewiseSearchOnEveryByteValue() {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        for target in 0...255 {
            for _ in 0..<20 {
                let length = Int(state % 70)
                var bytes: [UInt8] = []
                for _ in 0..<length {
                    state = xorshift(state)
                    // Mostly the neighbours of the target, 0x00, 0x80 and 0xFF.
                    let pick = [UInt8(target), UInt8(truncatingIfNeeded: target + 1), UInt8(truncatingIfNeeded: target &- 1), 0, 0x80, 0xFF]
                    bytes.append(state % 9 == 0 ? pick[0] : pick[1 + Int(state % 5)])
                }
                let start = length == 0 ? 0 : Int(state % UInt64(length))
                let expected = bytes[start...].firstIndex(of: UInt8(target)) ?? length
                #expect(search(UInt8(target), bytes, from: start) == expected, "\(target) in \(bytes) from \(start)")
            }
        }
    }

    private func search(_ byte: UInt8, or other: UInt8, _ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) -> Int {
        bytes.withUnsafeBufferPointer { ByteSearch.firstIndex(of: byte, or: other, in: $0, from: start, to: end ?? bytes.count) }
    }

    @Test func findsTheFirstOfTwoBytesAtEveryPositionAndLength() {
        // Every length through two 16-byte blocks and a tail; either byte at every position,
        // the other one after it, which must not win.
        for length in 1...41 {
            for position in 0..<length {
                for (first, second) in [(UInt8(0x0A), UInt8(0x0D)), (0x0D, 0x0A)] {
                    var bytes = [UInt8](repeating: 0x41, count: length)
                    bytes[position] = first
                    if position + 1 < length { bytes[length - 1] = second }
                    #expect(search(0x0A, or: 0x0D, bytes) == position, "length \(length), position \(position)")
                }
            }
            #expect(search(0x0A, or: 0x0D, [UInt8](repeating: 0x41, count: length)) == length)
        }
        let bytes = Array("abcdefghijklmnopqrstuvwxyz\r0123\n".utf8)
        #expect(search(0x0A, or: 0x0D, bytes, from: 27) == 31)
        #expect(search(0x0A, or: 0x0D, bytes, from: 3, to: 26) == 26)  // `end` when the range holds none
        #expect(search(0x0A, or: 0x0D, bytes, from: 5, to: 5) == 5)
    }

    @Test func twoByteSearchAgreesWithABytewiseSearch() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for target in 0...255 {
            let other = UInt8(truncatingIfNeeded: target &* 7 &+ 3)
            for _ in 0..<10 {
                let length = Int(state % 70)
                var bytes: [UInt8] = []
                for _ in 0..<length {
                    state = xorshift(state)
                    let pick = [UInt8(target), other, UInt8(truncatingIfNeeded: target + 1), 0, 0x80, 0xFF]
                    bytes.append(state % 11 == 0 ? pick[Int(state % 2)] : pick[2 + Int(state % 4)])
                }
                let start = length == 0 ? 0 : Int(state % UInt64(length))
                let expected = bytes[start...].firstIndex { $0 == UInt8(target) || $0 == other } ?? length
                #expect(search(UInt8(target), or: other, bytes, from: start) == expected, "\(target), \(other) in \(bytes) from \(start)")
            }
        }
    }
}

/// The next value of Marsaglia's 64-bit xorshift generator (13, 7, 17): the tests' fixed,
/// repeatable stream of bytes.
private func xorshift(_ value: UInt64) -> UInt64 {
    var state = value
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    return state
}
