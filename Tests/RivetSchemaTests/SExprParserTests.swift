import RivetSchema
import Testing

@Suite struct SExprParserTests {
    func parse(_ text: String) throws -> [SExpr] { try SExprParser.parse(text, file: "t.rktd") }

    func failure(_ text: String) -> String? {
        do {
            _ = try SExprParser.parse(text, file: "t.rktd")
            return nil
        } catch {
            return error.description
        }
    }

    @Test func readsDataWithLocations() throws {
        let data = try parse("(record score\n  (home uint32)) ; comment\n\"a\\\"b\" -42 [x]")
        #expect(data.count == 4)
        #expect(data[0].location == SourceLocation(line: 1, column: 1))
        let record = try #require(data[0].properList)
        #expect(record[1].symbol == "score")
        #expect(record[1].location == SourceLocation(line: 1, column: 9))
        #expect(record[2].location == SourceLocation(line: 2, column: 3))
        #expect(data[1].kind == .string("a\"b"))
        #expect(data[1].location == SourceLocation(line: 3, column: 1))
        #expect(data[2].kind == .integer(-42))
        #expect(data[3].description == "(x)")
    }

    @Test func dottedListTailsAreSplicedOrKept() throws {
        let data = try parse("(device-rpcs . (current-score refresh-score)) (swift-access . public) (a . ())")
        #expect(data[0].description == "(device-rpcs current-score refresh-score)")
        #expect(data[0].properList?.count == 3)
        #expect(data[1].description == "(swift-access . public)")
        #expect(data[1].properList == nil)
        #expect(data[2].description == "(a)")
    }

    @Test func commentsOfEveryKindAreSkipped() throws {
        let data = try parse("#| block #| nested |# still |# (a #;(dropped) b) #;c d ; line")
        #expect(data.map(\.description) == ["(a b)", "d"])
    }

    @Test func stringsResolveEscapesAndPrintBack() throws {
        let data = try parse(#""tab\tnew\nline \\ \"q\" ünï""#)
        #expect(data[0].kind == .string("tab\tnew\nline \\ \"q\" ünï"))
        #expect(data[0].description == #""tab\tnew\nline \\ \"q\" ünï""#)
    }

    @Test func nestingAtTheBoundParsesAndOnePastFails() throws {
        let atLimit = String(repeating: "(", count: 64) + String(repeating: ")", count: 64)
        #expect(try parse(atLimit).count == 1)
        let over = String(repeating: "(", count: 65) + String(repeating: ")", count: 65)
        #expect(failure(over) == "t.rktd:1:65: error: lists are nested deeper than 64 levels")
    }

    @Test(arguments: [
        ("(a b", "t.rktd:1:1: error: `(` is never closed"),
        ("a)", "t.rktd:1:2: error: `)` has no matching opening parenthesis"),
        ("(a\n  ]", "t.rktd:2:3: error: `]` closes a list opened with `(` at 1:1"),
        ("'(a)", "t.rktd:1:1: error: quote syntax (') is not supported; write the list itself"),
        ("(a `b)", "t.rktd:1:4: error: quote syntax (`) is not supported; write the list itself"),
        ("(a ,b)", "t.rktd:1:4: error: quote syntax (,) is not supported; write the list itself"),
        ("{a}", "t.rktd:1:1: error: braces are not supported; use parentheses"),
        ("(x #t)", "t.rktd:1:4: error: `#` syntax is not supported here"),
        ("(x a#b)", "t.rktd:1:4: error: `#` syntax is not supported here"),
        ("(x |a b|)", "t.rktd:1:4: error: `|` in symbols is not supported"),
        ("\n  \"abc", "t.rktd:2:3: error: string is never closed"),
        (#""a\qb""#, #"t.rktd:1:3: error: unknown escape `\q` in string; use \" \\ \n \t or \r"#),
        ("#| open", "t.rktd:1:1: error: `#|` comment is never closed"),
        ("(a 99999999999999999999)", "t.rktd:1:4: error: integer 99999999999999999999 does not fit in 64 bits"),
        ("(. a)", "t.rktd:1:2: error: `.` needs a datum before it"),
        ("(a .)", "t.rktd:1:4: error: `.` must be followed by one datum"),
        ("(a . b c)", "t.rktd:1:8: error: only one datum may follow `.` in a list"),
        ("(a . b . c)", "t.rktd:1:8: error: a list may contain only one `.`"),
        ("a . b", "t.rktd:1:3: error: `.` is only allowed inside a list"),
        ("(a #;)", "t.rktd:1:6: error: `#;` comments out nothing before `)`"),
        ("a #;", "t.rktd:1:5: error: `#;` comments out nothing before the end of the file"),
    ])
    func malformedInputYieldsADiagnostic(_ input: String, _ expected: String) {
        #expect(failure(input) == expected)
    }

    @Test func emptyInputHasNoData() throws {
        #expect(try parse("").isEmpty)
        #expect(try parse("  ; only a comment\n").isEmpty)
    }
}
