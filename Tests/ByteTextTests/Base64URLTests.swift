import Testing

@testable import ByteText

@Suite struct Base64URLTests {
    /// RFC 4648 §10's test vectors, without their padding.
    @Test func theRFCVectorsWithoutPadding() {
        let table: [(String, String)] = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in table {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded, "\(plain)")
            #expect(Base64URL.decode(encoded) == Array(plain.utf8), "\(encoded)")
        }
    }

    /// 62 and 63 are `-` and `_` (the URL alphabet), never `+` and `/`.
    @Test func theURLAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(Base64URL.decode("+/+/") == nil)
        #expect(Base64URL.alphabet.count == 64)
        #expect(Set(Base64URL.alphabet).count == 64)
    }

    @Test func everyLengthRoundTripsAndHasTheUnpaddedLength() {
        for count in 0...70 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = Base64URL.encode(bytes)
            #expect(text.utf8.count == (count * 4 + 2) / 3, "\(count) bytes")
            #expect(!text.contains("="))
            #expect(Base64URL.decode(text) == bytes, "\(count) bytes")
        }
        // 32 bytes (a pairing token) are 43 characters.
        #expect(Base64URL.encode([UInt8](repeating: 0xFF, count: 32)).utf8.count == 43)
    }

    /// Only the canonical text of a byte string decodes.
    @Test func nonCanonicalTextIsRefused() {
        #expect(Base64URL.decode("Zg==") == nil, "padding")
        #expect(Base64URL.decode("Zm8=") == nil, "padding")
        #expect(Base64URL.decode("Z") == nil, "a length of 1 modulo 4")
        #expect(Base64URL.decode("Zm9vY") == nil, "a length of 1 modulo 4")
        #expect(Base64URL.decode("Zh") == nil, "unused low bits of the last digit not zero (Zg is canonical)")
        #expect(Base64URL.decode("Zm9") == nil, "unused low bits not zero (Zm8 is canonical)")
        #expect(Base64URL.decode("Zm 9v") == nil, "a space")
        #expect(Base64URL.decode("Zm9v\n") == nil, "a newline")
        #expect(Base64URL.decode("Zm9é") == nil, "a non-ASCII character")
        // Every last digit of a 2-digit group: only those with the low 4 bits zero decode.
        for (value, digit) in Base64URL.alphabet.enumerated() {
            let text = "A" + String(decoding: [digit], as: UTF8.self)
            #expect((Base64URL.decode(text) != nil) == (value & 0x0F == 0), "\(text)")
        }
        // Of a 3-digit group: those with the low 2 bits zero.
        for (value, digit) in Base64URL.alphabet.enumerated() {
            let text = "AA" + String(decoding: [digit], as: UTF8.self)
            #expect((Base64URL.decode(text) != nil) == (value & 0x03 == 0), "\(text)")
        }
    }
}
