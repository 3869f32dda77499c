import Foundation

/// The commands of a man page's EXAMPLES section, so a test can run each one as printed.
public enum ManPageExamples {
    /// Every command in the `.Bd -literal` blocks of the EXAMPLES section of the mdoc page at
    /// `path`, in order: a line starting with `$ ` begins a command (the prompt dropped), and
    /// the lines after it that do not start with `$ ` continue it (joined with newlines, as a
    /// shell reads them). `\e` becomes a backslash.
    public static func commands(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var commands: [String] = []
        var inExamples = false
        var inLiteral = false
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.hasPrefix(".Sh ") {
                inExamples = line == ".Sh EXAMPLES"
                continue
            }
            guard inExamples else { continue }
            if line.hasPrefix(".Bd -literal") {
                inLiteral = true
            } else if line == ".Ed" {
                inLiteral = false
            } else if inLiteral {
                let unescaped = line.replacingOccurrences(of: "\\e", with: "\\")
                if unescaped.hasPrefix("$ ") {
                    commands.append(String(unescaped.dropFirst(2)))
                } else if !commands.isEmpty {
                    commands[commands.count - 1] += "\n" + unescaped
                }
            }
        }
        return commands
    }

    /// The processes descended from `pid` (children first, then theirs), from
    /// `/proc/PID/task/PID/children`, with their command names (`/proc/PID/comm`).
    public static func descendants(of pid: Int32) -> [(pid: Int32, name: String)] {
        var found: [(pid: Int32, name: String)] = []
        var queue = [pid]
        while !queue.isEmpty {
            let parent = queue.removeFirst()
            let list = (try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8)) ?? ""
            for child in list.split(separator: " ").compactMap({ Int32($0) }) {
                let name = (try? String(contentsOfFile: "/proc/\(child)/comm", encoding: .utf8)) ?? ""
                found.append((child, name.trimmingCharacters(in: .whitespacesAndNewlines)))
                queue.append(child)
            }
        }
        return found
    }
}
