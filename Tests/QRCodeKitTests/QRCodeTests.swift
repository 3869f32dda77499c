import QRCodeKit
import Testing

@Suite struct QRCodeTests {
    @Test func oneByteMoreThanTheMaximumIsTooLong() throws {
        #expect(QRCode.maximumByteCount == 2331)
        #expect(try QRCode(encoding: String(repeating: "x", count: 2331)).size == 177)
        let error = #expect(throws: QRCodeError.tooLong) { try QRCode(encoding: String(repeating: "x", count: 2332)) }
        #expect(error?.message.contains("2332 bytes") == true)
        #expect(error?.message.contains("at most 2331 bytes") == true)
        // Counted in UTF-8 bytes, not characters: 1166 "é" are 2332 bytes.
        #expect(throws: QRCodeError.tooLong) { try QRCode(encoding: String(repeating: "é", count: 1166)) }
        #expect(throws: QRCodeError.tooLong) { try QRCode(encoding: String(repeating: "x", count: 100_000)) }
    }

    @Test func anEmptyTextIsRefused() {
        #expect(throws: QRCodeError.emptyText) { try QRCode(encoding: "") }
    }

    /// The smallest version that holds the text: version 1-M holds 14 bytes, the 15th needs version 2.
    @Test func theSmallestVersionIsChosen() throws {
        #expect(try QRCode(encoding: String(repeating: "z", count: 14)).size == 21)
        #expect(try QRCode(encoding: String(repeating: "z", count: 15)).size == 25)
    }

    /// The three finder patterns (7 × 7: a dark ring, a light ring, a dark 3 × 3 centre) sit in
    /// the corners, each with a light separator beside it: bit 0 of libqrencode's bytes, whose
    /// other bits are set on light modules too.
    @Test func theModulesShowTheFinderPatterns() throws {
        let code = try QRCode(encoding: "rivet://127.0.0.1:7420/pair")
        let last = code.size - 1
        for (top, left) in [(0, 0), (0, code.size - 7), (code.size - 7, 0)] {
            for row in 0..<7 {
                for column in 0..<7 {
                    let ring = max(abs(row - 3), abs(column - 3))
                    #expect(code.isDark(row: top + row, column: left + column) == (ring != 2), "finder at (\(top), \(left))")
                }
            }
        }
        #expect((0...7).allSatisfy { !code.isDark(row: 7, column: $0) && !code.isDark(row: $0, column: 7) })
        #expect((0...7).allSatisfy { !code.isDark(row: 7, column: last - $0) && !code.isDark(row: last - $0, column: 7) })
        // The timing pattern alternates between the finders, dark first.
        #expect((8...(last - 8)).allSatisfy { code.isDark(row: 6, column: $0) == ($0 % 2 == 0) })
    }

    /// Letters keep their case: the same letters in another case make another code.
    @Test func caseIsKept() throws {
        #expect(try QRCode(encoding: "RIVET") != QRCode(encoding: "rivet"))
    }
}
