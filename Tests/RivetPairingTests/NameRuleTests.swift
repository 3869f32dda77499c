import ByteText
import Foundation
import Testing

@testable import RivetPairing

/// Device names and application IDs refuse every character a person cannot see for what it is
/// (C0, DEL, C1, Unicode Cf, Zl, Zp, unassigned), so a name cannot reorder or hide text on the
/// desktop's screen; names a registry already holds still load, and are shown escaped.
@Suite struct NameRuleTests {
    /// One name per class of hidden character, each between ordinary letters.
    static let hidden: [(String, String)] = [
        ("U+202E right-to-left override", "Kitchen\u{202E}gnp.exe"),
        ("U+202A left-to-right embedding", "a\u{202A}b"),
        ("U+2066 left-to-right isolate", "a\u{2066}b"),
        ("U+2069 pop directional isolate", "a\u{2069}b"),
        ("U+200B zero-width space", "Kit\u{200B}chen"),
        ("U+200E left-to-right mark", "a\u{200E}b"),
        // U+200D is a format character too: emoji joined by it ("👩‍👩‍👧") are refused with it,
        // since the same joiner between letters is invisible.
        ("U+200D zero-width joiner", "Kit\u{200D}chen"),
        ("U+2028 line separator", "Kitchen\u{2028}paired"),
        ("U+2029 paragraph separator", "Kitchen\u{2029}paired"),
        ("U+FEFF zero-width no-break space", "\u{FEFF}Kitchen"),
        ("U+0085 C1 next line", "a\u{85}b"),
        ("U+009B C1 control sequence introducer", "a\u{9B}31mb"),
        ("U+001B escape", "a\u{1B}[2Jb"),
        ("U+007F delete", "a\u{7F}b"),
        ("U+0378 unassigned", "a\u{378}b"),
        ("U+E0001 language tag", "a\u{E0001}b"),
    ]

    static let ordinary = ["Kitchen", "Ana’s phone 📱", "台所のタブレット", "Ünïcödé café", "e\u{301}", "❤️ 🇪🇸", "a\"b\\c", "مطبخ"]

    @Test func deviceNamesRefuseEveryHiddenClass() {
        for (what, text) in Self.hidden {
            let error = #expect(throws: RivetDevicePairingValueError.invalidDeviceName, "\(what)") { try RivetDeviceName(text) }
            #expect(error?.message.contains("format") == true, "\(what): the error names the rule")
            #expect(error.map { DisplayText.containsHidden($0.message) } == false, "\(what): the error shows it escaped")
        }
    }

    @Test func applicationIDsRefuseEveryHiddenClass() {
        for (what, text) in Self.hidden {
            let error = #expect(throws: RivetDevicePairingValueError.invalidApplicationID, "\(what)") { try RivetApplicationID(text) }
            #expect(error?.message.contains("format") == true, "\(what): the error names the rule")
        }
    }

    @Test func ordinaryLettersEmojiAndCJKAreAccepted() throws {
        for text in Self.ordinary {
            #expect(try RivetDeviceName(text).value == text)
            #expect(try RivetApplicationID(text).value == text)
        }
    }

    @Test func storedNamesWithHiddenCharactersStillLoadAndShowEscaped() throws {
        let name = try RivetDeviceName(stored: "Kitchen\u{202E}gnp.exe")
        #expect(name.value == "Kitchen\u{202E}gnp.exe")
        #expect(name.quoted == "\"Kitchen\\u{202E}gnp.exe\"")
        #expect(name.escaped == "Kitchen\\u{202E}gnp.exe")
        let application = try RivetApplicationID(stored: "app\u{200B}")
        #expect(application.quoted == "\"app\\u{200B}\"")
        // The length bound and the control rule hold for stored names too: at the limit it
        // loads, one byte past it does not.
        #expect(try RivetDeviceName(stored: String(repeating: "n", count: 128)).value.utf8.count == 128)
        #expect(try RivetApplicationID(stored: String(repeating: "a", count: 255)).value.utf8.count == 255)
        #expect(throws: RivetDevicePairingValueError.invalidDeviceName) { try RivetDeviceName(stored: "") }
        #expect(throws: RivetDevicePairingValueError.invalidDeviceName) { try RivetDeviceName(stored: String(repeating: "n", count: 129)) }
        #expect(throws: RivetDevicePairingValueError.invalidDeviceName) { try RivetDeviceName(stored: "a\u{1B}b") }
        #expect(throws: RivetDevicePairingValueError.invalidApplicationID) { try RivetApplicationID(stored: String(repeating: "a", count: 256)) }
    }

    @Test func quotesInANameAreEscapedWhereItIsQuoted() throws {
        let name = try RivetDeviceName("Kitchen\" from 10.9.9.9 \\")
        #expect(name.quoted == "\"Kitchen\\\" from 10.9.9.9 \\\\\"")
    }

    @Test func aLinkWithAHiddenApplicationIDIsRefused() {
        let fingerprint = String(repeating: "ab", count: 32)
        let token = String(repeating: "A", count: 43)
        for app in ["app%E2%80%AE", "app%E2%80%8B", "app%E2%80%A8", "app%EF%BB%BF"] {
            #expect(throws: RivetPairingLinkError.invalidApplicationID, "\(app)") {
                try RivetPairingLink(parsing: "rivet://127.0.0.1:1/pair?app=\(app)&fp=\(fingerprint)&t=\(token)")
            }
        }
    }
}
