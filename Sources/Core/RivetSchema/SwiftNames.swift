/// How schema names become Swift identifiers: types in UpperCamelCase (`score-board` →
/// `ScoreBoard`), members with hyphens as underscores (`game-id` → `game_id`), Swift keywords
/// in backticks.
public enum SwiftNames {
    /// The Swift type name of a record or enum.
    public static func typeName(_ name: String) -> String {
        name.split(separator: "-").map { word in word.prefix(1).uppercased() + word.dropFirst() }.joined()
    }

    /// The Swift request type generated for an exported RPC.
    public static func requestTypeName(_ rpc: String) -> String { typeName(rpc) + "Request" }

    /// The Swift member name (field, argument, method, enum case, route constant).
    public static func memberName(_ name: String) -> String {
        String(name.map { $0 == "-" ? "_" : $0 })
    }

    /// ``memberName(_:)`` in backticks when it is a Swift keyword.
    public static func escapedMemberName(_ name: String) -> String {
        let member = memberName(name)
        return keywords.contains(member) ? "`\(member)`" : member
    }

    static let keywords: Set<String> = [
        "associatedtype", "borrowing", "class", "consuming", "deinit", "enum", "extension",
        "fileprivate", "func", "import", "init", "inout", "internal", "let", "nonisolated",
        "open", "operator", "package", "private", "precedencegroup", "protocol", "public",
        "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case",
        "catch", "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard",
        "if", "in", "repeat", "return", "throw", "switch", "where", "while", "as", "any",
        "await", "false", "is", "nil", "self", "super", "throws", "true", "try", "async",
        "some", "actor", "macro", "each", "discard", "copy", "consume",
    ]
}
