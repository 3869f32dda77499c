import Glibc
import RastrilloCLI

/// The check that keeps a response body that is not plain text off a terminal, as curl does
/// ("Binary output can mess up your terminal"): written to a terminal, a body's bytes are
/// commands to it (escape sequences can retitle the window, redefine keys, hide or rewrite
/// what is shown). A body bound for a pipe or a file is never checked.
enum TerminalGuard {
    /// Why `body` may not be written to a terminal, or nil when it is text: valid UTF-8 with no
    /// control character but tab, line feed and carriage return (no NUL, ESC, backspace, DEL,
    /// and no C1 control such as the one-character CSI U+009B).
    static func refusal(of body: [UInt8]) -> String? {
        if let nul = body.firstIndex(of: 0) { return "it is binary (a NUL byte at offset \(nul))" }
        guard String(validating: body, as: UTF8.self) != nil else { return "it is binary (not UTF-8 text)" }
        for (offset, byte) in body.enumerated() {
            if (byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D) || byte == 0x7F {
                return "it holds a control character (byte \(hex(byte)) at offset \(offset))"
            }
            // In valid UTF-8, C2 80 to C2 9F are the C1 controls U+0080 to U+009F.
            if byte == 0xC2, offset + 1 < body.count, (0x80...0x9F).contains(body[offset + 1]) {
                return "it holds a control character (U+00\(hex(body[offset + 1])) at offset \(offset))"
            }
        }
        return nil
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0" + digits : digits
    }

    /// Throws when standard output is a terminal, `allowed` is false and `body` is not text.
    /// - Throws: `LocalFailure` (exit 1) saying why and how to write it anyway.
    static func check(_ body: [UInt8], status: Int, allowed: Bool) throws {
        guard !allowed, isatty(STDOUT_FILENO) == 1, let why = refusal(of: body) else { return }
        throw LocalFailure(
            "the response body (status \(status), \(body.count) bytes) was not written to the terminal: \(why), "
                + "and binary output can mess up a terminal; redirect standard output to a file or a pipe, "
                + "or use --binary-to-terminal to write it anyway")
    }
}
