extension QRCode {
    /// The code drawn for a terminal with UTF-8 half blocks, two module rows to a line: `█` both
    /// dark, `▀` the top one only, `▄` the bottom one only, a space neither. A light quiet zone
    /// of `quietZone` modules (4 by default, what scanners expect; at least 0) surrounds the
    /// symbol and is drawn too, as spaces that are never trimmed; when the height is odd, the
    /// last line's bottom half is a light row. Every line ends with `\n`, and all lines have
    /// `size + 2 × quietZone` characters.
    ///
    /// With `colours`, each line starts with `ESC[30;107m` (black on bright white) and ends with
    /// `ESC[0m` before its newline, so the code reads dark on light whatever the terminal's own
    /// colours. Without it there is no escape sequence: the block characters are the dark
    /// modules, right on paper and on a light terminal, inverted on a dark one.
    public func terminalText(colours: Bool, quietZone: Int = 4) -> String {
        precondition(quietZone >= 0, "a negative quiet zone (\(quietZone))")
        let side = size + 2 * quietZone
        var text = ""
        for top in stride(from: 0, to: side, by: 2) {
            if colours { text += "\u{1B}[30;107m" }
            for column in 0..<side {
                let upper = isDarkOrQuiet(row: top - quietZone, column: column - quietZone)
                let lower = isDarkOrQuiet(row: top + 1 - quietZone, column: column - quietZone)
                switch (upper, lower) {
                case (true, true): text += "\u{2588}"
                case (true, false): text += "\u{2580}"
                case (false, true): text += "\u{2584}"
                case (false, false): text += " "
                }
            }
            if colours { text += "\u{1B}[0m" }
            text += "\n"
        }
        return text
    }

    /// ``isDark(row:column:)``, and light outside the symbol (the quiet zone and the padding row).
    private func isDarkOrQuiet(row: Int, column: Int) -> Bool {
        (0..<size).contains(row) && (0..<size).contains(column) && isDark(row: row, column: column)
    }
}
