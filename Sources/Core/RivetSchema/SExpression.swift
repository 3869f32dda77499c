/// A position in a source file: 1-based line and column (columns count Unicode scalars).
public struct SourceLocation: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// 1-based line.
    public var line: Int
    /// 1-based column.
    public var column: Int

    /// Creates a location.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// Orders by line, then column.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }

    /// `line:column`.
    public var description: String { "\(line):\(column)" }
}

/// One error in a schema or lock file, printed as `path:line:col: error: message`.
public struct SchemaDiagnostic: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file the error is in, as the user named it.
    public var file: String
    /// Where in the file.
    public var location: SourceLocation
    /// What is wrong and, where useful, how to fix it.
    public var message: String

    /// `path:line:col: error: message`.
    public var description: String { "\(file):\(location.line):\(location.column): error: \(message)" }
}

/// The errors found in one file, in source order. Thrown by parsing, validation and lock
/// comparison; never empty.
public struct SchemaDiagnostics: Error, Hashable, Sendable, CustomStringConvertible {
    /// The diagnostics, ordered by location.
    public var diagnostics: [SchemaDiagnostic]

    /// Wraps diagnostics, ordering them by file and location.
    public init(_ diagnostics: [SchemaDiagnostic]) {
        self.diagnostics = diagnostics.sorted { ($0.file, $0.location) < ($1.file, $1.location) }
    }

    /// One diagnostic per line.
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// One datum of an s-expression file with the location of its first character.
public struct SExpr: Hashable, Sendable, CustomStringConvertible {
    /// The datum's shape.
    public indirect enum Kind: Hashable, Sendable {
        /// A bare word such as `record` or `current-score`.
        case symbol(String)
        /// A double-quoted string with its escapes resolved.
        case string(String)
        /// A decimal integer.
        case integer(Int64)
        /// A parenthesised list; `tail` is the datum after a `.` when the tail is not a list
        /// (`(swift-access . public)`). `(a . (b c))` is read as `(a b c)`.
        case list([SExpr], tail: SExpr?)
    }

    /// The datum's shape.
    public var kind: Kind
    /// Where the datum starts.
    public var location: SourceLocation

    /// Creates a datum.
    public init(_ kind: Kind, at location: SourceLocation) {
        self.kind = kind
        self.location = location
    }

    /// The symbol's name, or `nil` when this is not a symbol.
    public var symbol: String? {
        if case .symbol(let name) = kind { return name }
        return nil
    }

    /// The list's elements when this is a proper list (no dotted tail), else `nil`.
    public var properList: [SExpr]? {
        if case .list(let elements, nil) = kind { return elements }
        return nil
    }

    /// The datum printed back in canonical form (single spaces, strings re-escaped).
    public var description: String {
        switch kind {
        case .symbol(let name): return name
        case .integer(let value): return String(value)
        case .string(let value):
            var out = "\""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                case "\r": out += "\\r"
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        case .list(let elements, let tail):
            var parts = elements.map(\.description)
            if let tail { parts += [".", tail.description] }
            return "(" + parts.joined(separator: " ") + ")"
        }
    }
}

/// Reads s-expression text (the subset `rivet.rktd` uses) into data with locations.
///
/// Supported: lists in `()` or `[]`, dotted tails, symbols, decimal integers, strings with
/// `\" \\ \n \t \r` escapes, `;` line comments, nestable `#| |#` block comments and `#;` datum
/// comments. Anything else (quotes, other `#` syntax, `{}`, `|symbols|`) is reported, never
/// guessed. Nesting is bounded by ``maxDepth``; parsing never recurses.
public enum SExprParser {
    /// Deepest list nesting accepted.
    public static let maxDepth = 64

    /// Parses every datum in `text`.
    /// - Parameter file: the path printed in diagnostics.
    /// - Throws: ``SchemaDiagnostics`` with the first syntax error.
    public static func parse(_ text: String, file: String) throws(SchemaDiagnostics) -> [SExpr] {
        var reader = Reader(scalars: Array(text.unicodeScalars), file: file)
        do {
            return try reader.readAll()
        } catch {
            throw SchemaDiagnostics([error])
        }
    }
}

private struct Reader {
    private struct OpenList {
        var elements: [SExpr] = []
        var closer: Unicode.Scalar
        var location: SourceLocation
        var dotLocation: SourceLocation?
        var tail: SExpr?
        /// `#;` comments waiting for the datum they discard, at this level.
        var pendingDatumComments = 0
    }

    let scalars: [Unicode.Scalar]
    let file: String
    var index = 0
    var line = 1
    var column = 1

    init(scalars: [Unicode.Scalar], file: String) {
        self.scalars = scalars
        self.file = file
    }

    var location: SourceLocation { SourceLocation(line: line, column: column) }

    func error(_ message: String, at location: SourceLocation) -> SchemaDiagnostic {
        SchemaDiagnostic(file: file, location: location, message: message)
    }

    mutating func advance() {
        if scalars[index] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    static func isDelimiter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "(", ")", "[", "]", "{", "}", "\"", ";", "'", "`", ",": return true
        default: return scalar.properties.isWhitespace
        }
    }

    mutating func readAll() throws(SchemaDiagnostic) -> [SExpr] {
        var top = OpenList(closer: "\0", location: location)
        var stack: [OpenList] = []

        func place(_ datum: SExpr, into list: inout OpenList) throws(SchemaDiagnostic) {
            if list.pendingDatumComments > 0 {
                list.pendingDatumComments -= 1
                return
            }
            if list.dotLocation != nil {
                guard list.tail == nil else {
                    throw error("only one datum may follow `.` in a list", at: datum.location)
                }
                list.tail = datum
                return
            }
            list.elements.append(datum)
        }

        while true {
            try skipTrivia()
            guard let scalar = peek() else { break }
            let start = location
            switch scalar {
            case "(", "[":
                if stack.count >= SExprParser.maxDepth {
                    throw error("lists are nested deeper than \(SExprParser.maxDepth) levels", at: start)
                }
                advance()
                stack.append(OpenList(closer: scalar == "(" ? ")" : "]", location: start))
            case ")", "]":
                guard let list = stack.popLast() else {
                    throw error("`\(scalar)` has no matching opening parenthesis", at: start)
                }
                guard scalar == list.closer else {
                    throw error("`\(scalar)` closes a list opened with `\(list.closer == ")" ? "(" : "[")` at \(list.location)", at: start)
                }
                if list.pendingDatumComments > 0 {
                    throw error("`#;` comments out nothing before `\(scalar)`", at: start)
                }
                if let dot = list.dotLocation, list.tail == nil {
                    throw error("`.` must be followed by one datum", at: dot)
                }
                advance()
                let datum: SExpr
                if let tail = list.tail, case .list(let more, let moreTail) = tail.kind {
                    datum = SExpr(.list(list.elements + more, tail: moreTail), at: list.location)
                } else {
                    datum = SExpr(.list(list.elements, tail: list.tail), at: list.location)
                }
                if stack.isEmpty {
                    try place(datum, into: &top)
                } else {
                    try place(datum, into: &stack[stack.count - 1])
                }
            case "{", "}":
                throw error("braces are not supported; use parentheses", at: start)
            case "'", "`", ",":
                throw error("quote syntax (\(scalar)) is not supported; write the list itself", at: start)
            case "#" where peek(1) == ";":
                advance()
                advance()
                if stack.isEmpty { top.pendingDatumComments += 1 } else { stack[stack.count - 1].pendingDatumComments += 1 }
            case "#":
                throw error("`#` syntax is not supported here", at: start)
            case "\"":
                let datum = SExpr(.string(try readString()), at: start)
                if stack.isEmpty { try place(datum, into: &top) } else { try place(datum, into: &stack[stack.count - 1]) }
            default:
                let token = readToken()
                if token == "." {
                    guard !stack.isEmpty else { throw error("`.` is only allowed inside a list", at: start) }
                    var list = stack[stack.count - 1]
                    if list.elements.isEmpty { throw error("`.` needs a datum before it", at: start) }
                    if list.dotLocation != nil { throw error("a list may contain only one `.`", at: start) }
                    list.dotLocation = start
                    stack[stack.count - 1] = list
                    continue
                }
                let datum = SExpr(try atom(token, at: start), at: start)
                if stack.isEmpty { try place(datum, into: &top) } else { try place(datum, into: &stack[stack.count - 1]) }
            }
        }
        if let open = stack.last {
            throw error("`\(open.closer == ")" ? "(" : "[")` is never closed", at: open.location)
        }
        if top.pendingDatumComments > 0 {
            throw error("`#;` comments out nothing before the end of the file", at: location)
        }
        return top.elements
    }

    mutating func skipTrivia() throws(SchemaDiagnostic) {
        while let scalar = peek() {
            if scalar.properties.isWhitespace {
                advance()
            } else if scalar == ";" {
                while let next = peek(), next != "\n" { advance() }
            } else if scalar == "#", peek(1) == "|" {
                let start = location
                advance()
                advance()
                var depth = 1
                while depth > 0 {
                    guard let next = peek() else { throw error("`#|` comment is never closed", at: start) }
                    if next == "|", peek(1) == "#" {
                        depth -= 1
                        advance()
                    } else if next == "#", peek(1) == "|" {
                        depth += 1
                        advance()
                    }
                    advance()
                }
            } else {
                return
            }
        }
    }

    mutating func readString() throws(SchemaDiagnostic) -> String {
        let start = location
        advance()
        var value = String.UnicodeScalarView()
        while true {
            guard let scalar = peek() else { throw error("string is never closed", at: start) }
            if scalar == "\"" {
                advance()
                return String(value)
            }
            if scalar == "\\" {
                let escapeLocation = location
                advance()
                guard let escaped = peek() else { throw error("string is never closed", at: start) }
                switch escaped {
                case "\"": value.append("\"")
                case "\\": value.append("\\")
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "r": value.append("\r")
                default:
                    throw error("unknown escape `\\\(escaped)` in string; use \\\" \\\\ \\n \\t or \\r", at: escapeLocation)
                }
                advance()
                continue
            }
            value.append(scalar)
            advance()
        }
    }

    mutating func readToken() -> String {
        var token = String.UnicodeScalarView()
        while let scalar = peek(), !Self.isDelimiter(scalar) {
            token.append(scalar)
            advance()
        }
        return String(token)
    }

    func atom(_ token: String, at start: SourceLocation) throws(SchemaDiagnostic) -> SExpr.Kind {
        if token.unicodeScalars.contains("|") {
            throw error("`|` in symbols is not supported", at: start)
        }
        if token.unicodeScalars.contains("#") {
            throw error("`#` syntax is not supported here", at: start)
        }
        let digits = token.hasPrefix("-") || token.hasPrefix("+") ? token.dropFirst() : Substring(token)
        if !digits.isEmpty, digits.unicodeScalars.allSatisfy({ $0.properties.numericType != nil && $0.isASCII }) {
            guard let value = Int64(token) else {
                throw error("integer \(token) does not fit in 64 bits", at: start)
            }
            return .integer(value)
        }
        return .symbol(token)
    }
}
