import Foundation

import Foundation

/// A QR code read back from the half-block text QRCodeKit draws (QRCodeKitTests, and rivet-pair's
/// --qr in RivetdTests), and zbarimg to decode it.

/// The modules a half-block picture shows, read back from its text: row after row, true for dark.
public struct Picture: Equatable, Sendable {
    /// The modules, row after row, true for dark.
    public let rows: [[Bool]]

    /// A picture of these modules.
    public init(rows: [[Bool]]) { self.rows = rows }

    /// Reads `terminalText` output: SGR sequences (`ESC[…m`) are dropped, each line gives two
    /// module rows (its characters' top and bottom halves). Nil for a character that is not one
    /// of the four half-block glyphs.
    public init?(terminalText text: String) {
        var rows: [[Bool]] = []
        for line in Self.strippingSGR(text).split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            var top: [Bool] = []
            var bottom: [Bool] = []
            for character in line {
                switch character {
                case "\u{2588}": top.append(true); bottom.append(true)
                case "\u{2580}": top.append(true); bottom.append(false)
                case "\u{2584}": top.append(false); bottom.append(true)
                case " ": top.append(false); bottom.append(false)
                default: return nil
                }
            }
            rows += [top, bottom]
        }
        self.rows = rows
    }

    /// `text` without its `ESC[…m` sequences.
    public static func strippingSGR(_ text: String) -> String {
        text.replacing(/\x{1B}\[[0-9;]*m/, with: "")
    }

    /// A binary PGM (P5) of the picture, each module `scale` × `scale` pixels, dark 0, light 255.
    public func pgm(scale: Int) -> Data {
        let width = (rows.first?.count ?? 0) * scale
        let height = rows.count * scale
        var data = Data("P5\n\(width) \(height)\n255\n".utf8)
        for row in rows {
            let line = row.flatMap { dark in [UInt8](repeating: dark ? 0 : 255, count: scale) }
            for _ in 0..<scale { data.append(contentsOf: line) }
        }
        return data
    }
}

/// zbarimg is missing, failed, or found no code.
public struct DecodeFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
}

/// zbarimg from zbar-tools (`.ci/packages`), the independent decoder the pictures must satisfy.
public enum Zbar {
    /// Where Debian's zbar-tools installs it.
    public static let path = "/usr/bin/zbarimg"

    /// The bytes zbarimg reads from `picture`, drawn 6 pixels a module: `--raw` and
    /// `-Sbinary` print the symbol's bytes as they are (no charset guess, no conversion, no
    /// newline added), `-q` nothing else, `--nodbus` keeps it off the system bus. Throws when
    /// zbarimg is missing, fails or finds no code: a missing decoder fails the test, never skips it.
    public static func decode(_ picture: Picture) throws -> [UInt8] {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw DecodeFailure(description: "\(path) is missing: install zbar-tools (.ci/packages install)")
        }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let image = directory.file("code.pgm")
        try picture.pgm(scale: 6).write(to: URL(fileURLWithPath: image))
        let run = try ToolProcess.runProgram(
            at: path, ["--raw", "-q", "-Sbinary", "--nodbus", image], timeout: .seconds(60))
        guard run.status == 0 else {
            throw DecodeFailure(description: "zbarimg exited with status \(run.status) on \(image): \(run.stderr)")
        }
        return Array(run.stdout.utf8)
    }
}
