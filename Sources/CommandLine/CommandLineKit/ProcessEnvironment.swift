import Glibc

/// The process's environment, read straight from `environ`.
///
/// The same variables as Foundation's `ProcessInfo.processInfo.environment`, without linking
/// Foundation: the tools that read their environment start measurably faster without it
/// (`bench/fetch`).
public enum ProcessEnvironment {
    /// Every variable of the process's environment by name. When a name is defined twice the
    /// first definition wins, as with getenv(3); an entry without `=` is skipped.
    public static func current() -> [String: String] {
        var variables: [String: String] = [:]
        guard var entry = Optional(environ) else { return [:] }
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                let name = String(text[..<equals])
                if variables[name] == nil { variables[name] = String(text[text.index(after: equals)...]) }
            }
            entry += 1
        }
        return variables
    }

    /// The value of the variable `name` (getenv(3)), or nil when it is not set. Cheaper than
    /// ``current()`` when a tool needs one variable: no dictionary of every variable is built.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
