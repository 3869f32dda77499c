import Foundation
import Testing

@testable import ByteText

@Suite struct Base64URLTests {
    /// RFC 4648 §10's test vectors, without their padding.
    @Test func theRFCVectorsWithoutPadding() {
        let table: [(String, String)] = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in table {
            #expect(Base64.url.encode(Array(plain.utf8)) == encoded, "\(plain)")
            #expect(Base64.url.decode(encoded) == Array(plain.utf8), "\(encoded)")
        }
    }

    /// 62 and 63 are `-` and `_` (the URL alphabet), never `+` and `/`.
    @Test func theURLAlphabet() {
        #expect(Base64.url.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64.url.decode("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(Base64.url.decode("+/+/") == nil)
        #expect(Base64.url.alphabet.count == 64)
        #expect(Set(Base64.url.alphabet).count == 64)
    }

    @Test func everyLengthRoundTripsAndHasTheUnpaddedLength() {
        for count in 0...70 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = Base64.url.encode(bytes)
            #expect(text.utf8.count == (count * 4 + 2) / 3, "\(count) bytes")
            #expect(!text.contains("="))
            #expect(Base64.url.decode(text) == bytes, "\(count) bytes")
        }
        // 32 bytes (a pairing token) are 43 characters.
        #expect(Base64.url.encode([UInt8](repeating: 0xFF, count: 32)).utf8.count == 43)
    }

    /// Only the canonical text of a byte string decodes.
    @Test func nonCanonicalTextIsRefused() {
        #expect(Base64.url.decode("Zg==") == nil, "padding")
        #expect(Base64.url.decode("Zm8=") == nil, "padding")
        #expect(Base64.url.decode("Z") == nil, "a length of 1 modulo 4")
        #expect(Base64.url.decode("Zm9vY") == nil, "a length of 1 modulo 4")
        #expect(Base64.url.decode("Zh") == nil, "unused low bits of the last digit not zero (Zg is canonical)")
        #expect(Base64.url.decode("Zm9") == nil, "unused low bits not zero (Zm8 is canonical)")
        #expect(Base64.url.decode("Zm 9v") == nil, "a space")
        #expect(Base64.url.decode("Zm9v\n") == nil, "a newline")
        #expect(Base64.url.decode("Zm9é") == nil, "a non-ASCII character")
        // Every last digit of a 2-digit group: only those with the low 4 bits zero decode.
        for (value, digit) in Base64.url.alphabet.enumerated() {
            let text = "A" + String(decoding: [digit], as: UTF8.self)
            #expect((Base64.url.decode(text) != nil) == (value & 0x0F == 0), "\(text)")
        }
        // Of a 3-digit group: those with the low 2 bits zero.
        for (value, digit) in Base64.url.alphabet.enumerated() {
            let text = "AA" + String(decoding: [digit], as: UTF8.self)
            #expect((Base64.url.decode(text) != nil) == (value & 0x03 == 0), "\(text)")
        }
    }
}

/// Both alphabets against Foundation's `Data.base64EncodedString` and `Data(base64Encoded:)`.
@Suite struct Base64FoundationTests {
    static func sample(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 167 &+ seed &* 31) }
    }

    /// Foundation's text in the URL alphabet, without padding.
    static func urlForm(_ standard: String) -> String {
        String(standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").prefix { $0 != "=" })
    }

    @Test func encodingMatchesFoundationForEveryLengthAndBothAlphabets() {
        for count in 0...100 {
            for seed in 0..<4 {
                let bytes = Self.sample(count, seed: seed)
                let foundation = Data(bytes).base64EncodedString()
                #expect(Base64.standard.encode(bytes) == foundation, "\(count) bytes")
                #expect(Base64.url.encode(bytes) == Self.urlForm(foundation), "\(count) bytes")
                #expect(Base64.standard.decode(foundation) == bytes, "\(count) bytes")
                #expect(Data(base64Encoded: Base64.standard.encode(bytes)).map { Array($0) } == bytes)
                #expect(Base64.url.decode(Self.urlForm(foundation)) == bytes, "\(count) bytes")
            }
        }
        let all = (0...255).map { UInt8($0) }
        #expect(Base64.standard.encode(all) == Data(all).base64EncodedString())
    }

    /// Malformed text: both refuse it. (Foundation also accepts nonzero unused bits, `Zh==`,
    /// and extra padding, `Zm8==`, which the strict decoder refuses: see
    /// ``standardPaddingIsStrict``.)
    @Test func malformedTextIsRefusedLikeFoundation() {
        for text in ["Zg", "Zg=", "Z===", "=Zg=", "Zm9v\n", "Zm 9v", "Zg==Zg==", "Zm-v", "Zm_v", "Zm9é"] {
            #expect(Data(base64Encoded: text) == nil, "\(text)")
            #expect(Base64.standard.decode(text) == nil, "\(text)")
        }
        for text in ["", "Zg==", "Zm8=", "Zm9v", "+/+/", "AAAA////"] {
            #expect(Base64.standard.decode(text) == Data(base64Encoded: text).map { Array($0) }, "\(text)")
        }
    }

    @Test func standardPaddingIsStrict() {
        #expect(Base64.standard.decode("Zg==") == [0x66])
        #expect(Base64.standard.decode("Zh==") == nil, "unused low bits not zero")
        #expect(Base64.standard.decode("Zm9=") == nil, "unused low bits not zero")
        #expect(Base64.standard.decode("Zg") == nil, "padding missing")
        #expect(Base64.standard.decode("-_-_") == nil, "the URL alphabet")
        #expect(Base64.standard.decode("Zm8==") == nil, "extra padding")
        #expect(Base64.standard.decode("Zm9v=") == nil, "extra padding")
        #expect(Base64.url.decode("Zg==") == nil, "padding in the unpadded form")
    }
}
