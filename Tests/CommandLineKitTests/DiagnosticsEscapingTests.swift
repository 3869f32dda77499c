@testable import CommandLineKit
import Synchronization
import Testing

/// Diagnostics.oneLine, the one escaping of text in diagnostics: controls, and also the
/// invisible format characters (BiDi embeddings, overrides, isolates and marks, zero-width
/// characters, the BOM) and the line and paragraph separators, which could reorder or hide
/// what a terminal shows.
@Suite struct DiagnosticsEscapingTests {
    @Test(arguments: [
        0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200B, 0x200C, 0x200D,
        0x200E, 0x200F, 0x2028, 0x2029, 0xFEFF, 0x061C, 0x00AD, 0x2060, 0x206F, 0xFFF9, 0xE0001,
    ] as [UInt32])
    func formatCharactersAndSeparatorsAreEscaped(value: UInt32) {
        let scalar = Unicode.Scalar(value)!
        let hex = String(value, radix: 16, uppercase: true)
        #expect(Diagnostics.oneLine("a\(Character(scalar))b") == "a\\u{\(hex)}b")
    }

    @Test func controlsAreStillEscapedAndTextIsKept() {
        #expect(Diagnostics.oneLine("a\u{1B}[2Jb\u{7F}\u{85}\u{9B}") == #"a\u{1B}[2Jb\u{7F}\u{85}\u{9B}"#)
        #expect(Diagnostics.oneLine("line\r\nbreak\tTab") == "line  break\tTab")
        // Letters, marks, symbols and spaces of any script stay as they are.
        let text = "naïve 日本語 عربى עברית e\u{301} 🙂 \u{A0}nbsp"
        #expect(Diagnostics.oneLine(text) == text)
    }

    @Test func aDiagnosticLineCarriesNoBiDiOverride() {
        let lines = Mutex<[String]>([])
        let diagnostics = Diagnostics(toolName: "tool", usesColor: false) { line in lines.withLock { $0.append(line) } }
        diagnostics.error("redirect to /\u{202E}gpj.exe\u{202C}")
        #expect(lines.withLock { $0 } == ["tool: redirect to /\\u{202E}gpj.exe\\u{202C}\n"])
    }
}
