/// How text that came from elsewhere (a device's name, an application ID, a peer's message) is
/// shown on a terminal or written to a log, by one rule everywhere.
///
/// A *hidden* scalar is one a person cannot see for what it is: a C0 or C1 control character or
/// DEL (they move the cursor or start escape sequences), an invisible format character (Unicode
/// category Cf: the BiDi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, the
/// marks U+200E/U+200F and U+061C, the zero-width characters U+200B–U+200D and U+FEFF, …), the
/// line and paragraph separators U+2028/U+2029 (Zl, Zp), and a scalar Unicode has not assigned
/// (Cn), whose rendering no one can predict. Names refuse them; text shown anyway has them
/// escaped as `\u{XX}`.
public enum DisplayText {
    /// True if `scalar` is hidden: C0, DEL, C1, Cf, Zl, Zp or unassigned (Cn).
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) { return true }
        switch scalar.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator, .unassigned: return true
        default: return false
        }
    }

    /// True if `text` holds a hidden scalar.
    public static func containsHidden(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: isHidden)
    }

    /// `\u{XX}` (upper-case hex, no leading zeros) for `scalar`.
    public static func escape(_ scalar: Unicode.Scalar) -> String {
        "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
    }

    /// `text` with every hidden scalar written as `\u{XX}`; everything else as it is. For a table
    /// cell or a field that stands on its own.
    public static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if isHidden(scalar) { out += escape(scalar) } else { out.unicodeScalars.append(scalar) }
        }
        return out
    }

    /// `"text"` with `"` and `\` escaped by a backslash and every hidden scalar written as
    /// `\u{XX}`: for a name inside a log line or a question, where a quote in the name must not
    /// end the name early and make the rest of it read as the line's own words. Text longer
    /// than `limit` scalars (when given) is cut there and ends in `...` inside the quotes.
    public static func quoted(_ text: String, limit: Int? = nil) -> String {
        var out = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            if let limit, count == limit {
                out += "..."
                break
            }
            if scalar == "\"" || scalar == "\\" {
                out += "\\"
                out.unicodeScalars.append(scalar)
            } else if isHidden(scalar) {
                out += escape(scalar)
            } else {
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out + "\""
    }

    /// The number of terminal columns `text` takes: East Asian wide and fullwidth characters and
    /// emoji shown as emoji take 2, combining marks and other zero-width scalars 0, the rest 1,
    /// counted per grapheme cluster (a base with its marks, an emoji sequence). Meant for text
    /// already escaped (``escaped(_:)``), which holds no hidden scalar.
    public static func width(_ text: String) -> Int {
        var total = 0
        for character in text {
            total += width(of: character)
        }
        return total
    }

    /// `text` followed by spaces up to `columns` terminal columns (as ``width(_:)`` counts); text
    /// as wide or wider is returned as it is.
    public static func padded(_ text: String, toWidth columns: Int) -> String {
        let used = width(text)
        return used >= columns ? text : text + String(repeating: " ", count: columns - used)
    }

    private static func width(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        // An emoji sequence (a presentation selector, a joiner, a skin tone, a flag) shows as one
        // wide glyph.
        if scalars.contains(where: { $0.value == 0xFE0F || $0.value == 0x200D })
            || scalars.contains(where: { $0.properties.isEmojiPresentation })
        {
            return 2
        }
        var widest = 0
        for scalar in scalars {
            widest = max(widest, width(of: scalar))
        }
        return widest
    }

    private static func width(of scalar: Unicode.Scalar) -> Int {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        let value = scalar.value
        if value == 0 || (0x1160...0x11FF).contains(value) { return 0 }  // NUL, Hangul medial vowels and final consonants
        return wideRanges.contains(where: { $0.contains(value) }) ? 2 : 1
    }

    /// East Asian Wide (W) and Fullwidth (F) blocks, as terminals (wcwidth) draw them.
    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
        0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
        0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
        0x16FE0...0x16FE4, 0x17000...0x18AFF, 0x1B000...0x1B2FF, 0x1F200...0x1F2FF,
        0x20000...0x2FFFD, 0x30000...0x3FFFD,
    ]
}
