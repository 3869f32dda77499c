import ByteText
import Testing

/// The one rule for showing outside text: which scalars are hidden, their escaped and quoted
/// forms, and the terminal width used to pad columns.
@Suite struct DisplayTextTests {
    @Test func hiddenScalarsAreControlsFormatSeparatorsAndUnassigned() {
        let hidden: [UInt32] = [
            0x00, 0x07, 0x1B, 0x1F, 0x7F, 0x80, 0x85, 0x9B, 0x9F,  // C0, DEL, C1
            0x00AD, 0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F,  // soft hyphen, marks, zero-width
            0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069,  // BiDi
            0x2060, 0xFEFF, 0xE0001, 0xE007F,  // word joiner, BOM, tags
            0x2028, 0x2029,  // Zl, Zp
            0x0378, 0xFFFF, 0x10FFFF,  // unassigned
        ]
        for value in hidden {
            #expect(DisplayText.isHidden(Unicode.Scalar(value)!), "U+\(String(value, radix: 16, uppercase: true))")
        }
        for text in ["a", "Z", " ", "~", "é", "ß", "台", "タ", "한", "📱", "\u{301}", "\u{A0}", "’", "م", "\u{E000}"] {
            for scalar in text.unicodeScalars { #expect(!DisplayText.isHidden(scalar), "\(text)") }
        }
    }

    @Test func escapedShowsHiddenScalarsAsCodePoints() {
        #expect(DisplayText.escaped("Kitchen\u{202E}gnp.exe") == "Kitchen\\u{202E}gnp.exe")
        #expect(DisplayText.escaped("a\u{1B}[2J\u{2028}b\u{FEFF}") == "a\\u{1B}[2J\\u{2028}b\\u{FEFF}")
        #expect(DisplayText.escaped("Ana’s phone 📱 \"x\" \\") == "Ana’s phone 📱 \"x\" \\")
        #expect(!DisplayText.containsHidden(DisplayText.escaped("\u{0}\u{85}\u{200B}\u{2029}\u{378}")))
    }

    @Test func quotedEscapesQuotesBackslashesAndHiddenScalars() {
        #expect(DisplayText.quoted("Phone") == "\"Phone\"")
        #expect(DisplayText.quoted("a\"b") == "\"a\\\"b\"")
        #expect(DisplayText.quoted("a\\b") == "\"a\\\\b\"")
        #expect(DisplayText.quoted("x\u{202E}y\n") == "\"x\\u{202E}y\\u{A}\"")
        #expect(DisplayText.quoted("abcdef", limit: 3) == "\"abc...\"")
        #expect(DisplayText.quoted("abc", limit: 3) == "\"abc\"")
        #expect(DisplayText.quoted("") == "\"\"")
    }

    @Test func widthCountsTerminalColumns() {
        #expect(DisplayText.width("") == 0)
        #expect(DisplayText.width("Phone 1") == 7)
        #expect(DisplayText.width("台所") == 4)
        #expect(DisplayText.width("ＡＢ") == 4)  // fullwidth
        #expect(DisplayText.width("한국") == 4)
        #expect(DisplayText.width("e\u{301}") == 1)  // combining acute
        #expect(DisplayText.width("📱") == 2)
        #expect(DisplayText.width("👩‍👩‍👧") == 2)  // one ZWJ sequence
        #expect(DisplayText.width("❤️") == 2)  // text-default heart with VS16
        #expect(DisplayText.width("Ana’s phone 📱") == 14)
        #expect(DisplayText.width("Kitchen\\u{202E}") == 15)
    }

    @Test func paddedFillsToTheWidth() {
        #expect(DisplayText.padded("台所", toWidth: 6) == "台所  ")
        #expect(DisplayText.padded("ab", toWidth: 4) == "ab  ")
        #expect(DisplayText.padded("abcd", toWidth: 2) == "abcd")
        #expect(DisplayText.width(DisplayText.padded("e\u{301}📱", toWidth: 10)) == 10)
    }
}
