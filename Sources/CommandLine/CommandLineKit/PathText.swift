/// Path-string helpers with the results of `NSString`'s `lastPathComponent` and
/// `deletingLastPathComponent` for the paths the kit handles, without loading Foundation's
/// string bridging at start-up.
public enum PathText {
    /// `path` without its trailing slashes; a path of only slashes stays `/`.
    private static func trimmed(_ path: String) -> Substring {
        var text = Substring(path)
        while text.count > 1, text.hasSuffix("/") { text = text.dropLast() }
        return text
    }

    /// The last component: `a/b/` → `b`, `/` → `/`, `` → ``.
    public static func lastComponent(_ path: String) -> String {
        let text = trimmed(path)
        if text == "/" { return "/" }
        guard let slash = text.lastIndex(of: "/") else { return String(text) }
        return String(text[text.index(after: slash)...])
    }

    /// The path without its last component: `/a/b` → `/a`, `/a` → `/`, `a` → ``.
    public static func deletingLastComponent(_ path: String) -> String {
        let text = trimmed(path)
        if text == "/" { return "/" }
        guard let slash = text.lastIndex(of: "/") else { return "" }
        var parent = text[..<slash]
        while parent.hasSuffix("/") { parent = parent.dropLast() }
        return parent.isEmpty ? "/" : String(parent)
    }
}
