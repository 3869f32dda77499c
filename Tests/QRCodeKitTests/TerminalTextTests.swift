import QRCodeKit
import Testing
import ToolTestSupport

/// A text to encode, named for the test log.
struct Sample: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    var testDescription: String { name }
}

/// A pairing link of the shape rivet-pair shows: an SPKI fingerprint (64 hex digits) and a token
/// (32 bytes in base64url, 43 characters).
let fingerprint = "3f9a0c5e71b2d48e6a0f1c3b5d7e9f2a4c6e8b0d1f3a5c7e9b2d4f6a8c0e1b3d"
let token = "dGhlLXBhaXJpbmctdG9rZW4tX2Jhc2U2NHVybC0xMjM"
let pairingLink = "rivet://127.0.0.1:7420/pair?app=net.example.scoreboard&fp=\(fingerprint)&t=\(token)"

/// Texts of the kinds rivet-pair shows, and harder ones, each decoded back by zbarimg.
let samples: [Sample] = [
    Sample(name: "one letter", text: "a"),
    Sample(name: "a pairing link", text: pairingLink),
    Sample(name: "percent escapes and non-ASCII", text: "caf%C3%A9 = café, Größe, 日本語, 🎉 and MiXeD CaSe"),
    Sample(
        name: "1000 bytes",
        text: String(String(repeating: "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_.~%", count: 16).prefix(1000))),
]

@Suite struct TerminalTextTests {
    /// The pairing link's code, for the layout tests.
    let code: QRCode
    init() throws { code = try QRCode(encoding: pairingLink) }

    private func lines(_ text: String) -> [Substring] {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { $0 }
    }

    @Test func theSampleTextsHaveTheirLengths() {
        #expect(fingerprint.utf8.count == 64 && fingerprint.allSatisfy(\.isHexDigit))
        #expect(token.utf8.count == 43 && token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        #expect(samples[3].text.utf8.count == 1000)
    }

    /// zbarimg reads every sample back byte for byte from the drawn picture, plain and coloured.
    @Test(arguments: samples, [false, true])
    func thePictureDecodesToTheText(sample: Sample, colours: Bool) throws {
        let text = sample.text
        let code = try QRCode(encoding: text)
        let drawn = code.terminalText(colours: colours)
        let picture = try #require(Picture(terminalText: drawn))
        #expect(picture == Picture(code, quietZone: 4))
        #expect(try Zbar.decode(picture) == Array(text.utf8))
    }

    /// The decoding check can fail: a picture with the symbol left out holds no code.
    @Test func aPictureWithoutTheSymbolDoesNotDecode() throws {
        let code = try QRCode(encoding: "a")
        let blank = Picture(rows: Picture(code, quietZone: 4).rows.map { $0.map { _ in false } })
        #expect(throws: DecodeFailure.self) { try Zbar.decode(blank) }
    }

    /// The longest text a QR code holds (version 40-M, 2331 bytes) encodes and reads back.
    @Test func theLongestTextDecodes() throws {
        let text = String(repeating: "Rivet pairing, byte mode: ", count: 90).prefix(QRCode.maximumByteCount - 2) + "é"
        #expect(text.utf8.count == 2331)
        let code = try QRCode(encoding: String(text))
        #expect(code.size == 177)
        let picture = try #require(Picture(terminalText: code.terminalText(colours: false)))
        #expect(try Zbar.decode(picture) == Array(text.utf8))
    }

    @Test func everyLineHasTheFullWidthAndEndsWithANewline() {
        let text = code.terminalText(colours: false)
        #expect(text.hasSuffix("\n"))
        let drawn = lines(text)
        #expect(drawn.count == (code.size + 8 + 1) / 2)
        #expect(drawn.allSatisfy { $0.count == code.size + 8 })
    }

    /// Four light modules on every side: the first two lines and the last two are blank (the
    /// height, size + 8, is odd, so the last line's bottom half is padding), and every line
    /// starts and ends with four spaces.
    @Test func theQuietZoneIsDrawn() {
        let drawn = lines(code.terminalText(colours: false))
        let blank = String(repeating: " ", count: code.size + 8)
        #expect(drawn.prefix(2).allSatisfy { $0 == blank })
        #expect(drawn.suffix(2).allSatisfy { $0 == blank })
        #expect(drawn[2] != blank)
        #expect(drawn.allSatisfy { $0.hasPrefix("    ") && $0.hasSuffix("    ") })
    }

    /// The top-left finder pattern, two module rows a line: rows 0 and 1, then rows 2 and 3.
    @Test func theHalfBlocksShowTheFinderPattern() {
        let drawn = lines(code.terminalText(colours: false))
        #expect(drawn[2].dropFirst(4).prefix(7) == "█▀▀▀▀▀█")
        #expect(drawn[3].dropFirst(4).prefix(7) == "█ ███ █")
        // With a one-module quiet zone the finder's top row is the bottom half of the first line.
        let shifted = lines(code.terminalText(colours: false, quietZone: 1))
        #expect(shifted[0].prefix(9) == " ▄▄▄▄▄▄▄ ")
        #expect(shifted.count == (code.size + 2 + 1) / 2)
        #expect(Picture(terminalText: code.terminalText(colours: false, quietZone: 1)) == Picture(code, quietZone: 1))
        #expect(Picture(terminalText: code.terminalText(colours: false, quietZone: 0)) == Picture(code, quietZone: 0))
    }

    @Test func withoutColoursThereIsNoEscape() {
        #expect(!code.terminalText(colours: false).utf8.contains(0x1B))
    }

    /// Each coloured line is the plain line between `ESC[30;107m` and `ESC[0m`.
    @Test func withColoursEachLineIsWrapped() {
        let plain = lines(code.terminalText(colours: false))
        let coloured = lines(code.terminalText(colours: true))
        #expect(coloured.count == plain.count)
        for (colouredLine, plainLine) in zip(coloured, plain) {
            #expect(colouredLine == "\u{1B}[30;107m" + plainLine + "\u{1B}[0m")
        }
        #expect(code.terminalText(colours: true).hasSuffix("\u{1B}[0m\n"))
    }
}
