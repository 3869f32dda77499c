import Testing

import ByteText

@Suite struct HexTests {
    @Test func encodesLowercaseTwoDigitsPerByte() {
        #expect(Hex.encode([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Hex.encode([UInt8]()) == "")
    }

    @Test func roundTripsEveryByte() {
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.decode(Hex.encode(all).uppercased()) == all)
    }

    @Test func refusesWhatIsNotExactlyHexDigits() {
        #expect(Hex.decode("abc") == nil)  // odd length
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.decode("0x00") == nil)
        #expect(Hex.decode("00 11") == nil)
        #expect(Hex.decode("é0") == nil)  // two UTF-8 bytes, neither a digit
        #expect(Hex.decode("") == [])
    }

    @Test func checksTheByteCountAtItsEdge() {
        #expect(Hex.decode("00112233", byteCount: 4) == [0x00, 0x11, 0x22, 0x33])
        #expect(Hex.decode("001122", byteCount: 4) == nil)
        #expect(Hex.decode("0011223344", byteCount: 4) == nil)
    }

    @Test func lowercaseOnlyRefusesUppercase() {
        #expect(Hex.decode("abcd", lowercaseOnly: true) == [0xab, 0xcd])
        #expect(Hex.decode("aBcd", lowercaseOnly: true) == nil)
        #expect(Hex.value(of: UInt8(ascii: "F"), lowercaseOnly: true) == nil)
        #expect(Hex.value(of: UInt8(ascii: "F")) == 15)
    }

    @Test func digitsInEitherCase() {
        #expect(Hex.digit(9) == UInt8(ascii: "9"))
        #expect(Hex.digit(10) == UInt8(ascii: "a"))
        #expect(Hex.digit(15, uppercase: true) == UInt8(ascii: "F"))
    }
}

@Suite struct TextSearchTests {
    @Test func findsTheFirstOccurrenceByteByByte() {
        let text = "Too large response headers"
        let range = text.firstRange(ofText: "large")
        #expect(range.map { String(text[$0]) } == "large")
        #expect(text.containsText("headers"))
        #expect(!text.containsText("Headers"))
        #expect(!text.containsText("headers!"))
        #expect("aab".firstRange(ofText: "ab").map { "aab".utf8.distance(from: "aab".startIndex, to: $0.lowerBound) } == 1)
    }

    @Test func anEmptyTargetIsNeverFound() {
        #expect("abc".firstRange(ofText: "") == nil)
        #expect(!"".containsText("a"))
    }
}
