import RivetSchema
import Testing

func render(_ text: String) throws -> String {
    SwiftRenderer.render(try Schema.parse(text, file: "dir/rivet.rktd"))
}

@Suite struct RendererSnippetTests {
    @Test func recordBecomesAStructWithJSONKeysFromTheSchema() throws {
        let swift = try render("(record game-score (game-id string) (home uint32)) (rpc g () game-score) (device-rpcs g)")
        #expect(swift.contains("""
            /// Record `game-score`, carried as a JSON object.
            internal struct GameScore: Swift.Hashable, Swift.Sendable, Swift.Codable {
                /// `game-id` of `game-score`.
                internal var game_id: Swift.String
                /// `home` of `game-score`.
                internal var home: Swift.UInt32
                /// Creates a value from its fields.
                internal init(game_id: Swift.String, home: Swift.UInt32) {
                    self.game_id = game_id
                    self.home = home
                }
                private enum CodingKeys: Swift.String, Swift.CodingKey {
                    case game_id = "game-id"
                    case home = "home"
                }
            }
            """))
    }

    @Test func unexportedTypesGainNoCodable() throws {
        let swift = try render("(record desk (x int8)) (enum mode on off)")
        #expect(swift.contains("internal struct Desk: Swift.Hashable, Swift.Sendable {"))
        #expect(swift.contains("internal enum Mode: Swift.String, Swift.Hashable, Swift.Sendable, Swift.CaseIterable {"))
        #expect(!swift.contains("CodingKeys"))
        #expect(!swift.contains("Codable"))
    }

    @Test func enumCasesKeepTheirSchemaSpellingOnTheWire() throws {
        let swift = try render("(enum half first-half default) (rpc h () half) (device-rpcs h)")
        #expect(swift.contains("case first_half = \"first-half\""))
        #expect(swift.contains("case `default` = \"default\""))
    }

    @Test func keywordsAreEscapedEverywhere() throws {
        let swift = try render("(rpc in ((class string) (default (optional bool))) void) (device-rpcs in)")
        #expect(swift.contains("internal static let `in`: RivetRoute = \"in\""))
        #expect(swift.contains("internal func `in`(`class`: Swift.String, `default`: Swift.Bool?, timeout: Swift.Duration? = nil) async throws {"))
        #expect(swift.contains("_ = try await send(InRequest(`class`: `class`, `default`: `default`), timeout: timeout)"))
        #expect(swift.contains("func `in`(`class`: Swift.String, `default`: Swift.Bool?) async throws"))
        #expect(swift.contains(".rpc(InRequest.self) { request in"))
        #expect(swift.contains("try await backend.`in`(`class`: request.`class`, `default`: request.`default`)"))
        #expect(swift.contains("internal init(`class`: Swift.String, `default`: Swift.Bool? = nil) {"))
    }

    @Test func voidResultIsCarriedAsTheGeneratedUnitResponse() throws {
        let swift = try render("(rpc ping () void) (device-rpcs ping)")
        #expect(swift.contains("internal struct RivetUnitResponse: Swift.Codable, Swift.Hashable, Swift.Sendable {"))
        #expect(swift.contains("internal typealias Response = RivetUnitResponse"))
        #expect(swift.contains("internal func ping(timeout: Swift.Duration? = nil) async throws {"))
        #expect(swift.contains(".rpc(PingRequest.self) { _ in"))
        #expect(try !render("(rpc ping () void)").contains("RivetUnitResponse"))
    }

    @Test func compoundTypesMapToSwiftCollections() throws {
        let swift = try render("(rpc f ((a (list (optional bytes))) (b (list (list int64)))) (optional (list uint64))) (device-rpcs f)")
        #expect(swift.contains("import Foundation\n"))
        #expect(swift.contains("internal func f(a: [Foundation.Data?], b: [[Swift.Int64]], timeout: Swift.Duration? = nil) async throws -> [Swift.UInt64]? {"))
    }

    @Test func publicAccessAppliesToEveryDeclaration() throws {
        let swift = try render("(swift-access public) (record r (x int8)) (rpc f () r) (event e void) (state s bool) (device-rpcs f) (device-events e) (device-state s)")
        for line in swift.split(separator: "\n") where line.contains("internal") {
            Issue.record("internal declaration in public output: \(line)")
        }
        #expect(swift.contains("public static let e = RivetEventKey<RivetUnitResponse>(\"e\")"))
        #expect(swift.contains("public static let s = RivetStateKey<Swift.Bool>(\"s\")"))
        #expect(swift.contains("public func registerGeneratedBackend(_ backend: some RivetGeneratedBackend) throws(RivetDeviceError) {"))
    }

    @Test func emptySurfaceStillRendersTheEntryPoints() throws {
        let swift = try render("")
        #expect(swift.contains("// Exported RPCs: none. Events: none. State: none."))
        #expect(swift.contains("internal protocol RivetGeneratedBackend: Swift.Sendable {\n}"))
        #expect(swift.contains("try register([RivetDeviceHandler]())"))
    }

    @Test func schemaDocumentationBecomesDocComments() throws {
        let swift = try render("(rpc f \"Line one.\nLine two.\" () void) (device-rpcs f)")
        #expect(swift.contains("    /// Line one.\n    /// Line two.\n    /// - Parameter timeout:"))
        #expect(swift.hasPrefix("// Generated by rivet-generate from rivet.rktd."))
    }
}
