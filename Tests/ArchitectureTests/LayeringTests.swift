import Foundation
import Testing
import ToolTestSupport

/// The package's modules and their direct dependencies, as `swift package describe --type json`
/// reports them.
struct ModuleGraph {
    /// A target: its name, its kind (`library`, `executable`, `test`, `plugin`, `system-target`…)
    /// and the targets it names directly.
    struct Module {
        let name: String
        let kind: String
        let dependencies: [String]
    }

    let modules: [String: Module]

    init(_ modules: [Module]) {
        self.modules = Dictionary(modules.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Reads the output of `swift package describe --type json`.
    init(describeJSON data: Data) throws {
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let targets = root["targets"] as? [[String: Any]]
        else {
            throw ArchitectureError(description: "`swift package describe --type json` printed no `targets` array")
        }
        self.init(
            try targets.map { target in
                guard let name = target["name"] as? String, let kind = target["type"] as? String else {
                    throw ArchitectureError(description: "a target in the package description has no name or type")
                }
                return Module(name: name, kind: kind, dependencies: target["target_dependencies"] as? [String] ?? [])
            })
    }

    /// Every module `name` depends on, directly or through others (not `name` itself), without
    /// going through `avoided` (which is left out too).
    func closure(of name: String, avoiding avoided: String? = nil) -> Set<String> {
        var seen: Set<String> = []
        var queue = (modules[name]?.dependencies ?? []).filter { $0 != avoided }
        while let next = queue.popLast() {
            guard seen.insert(next).inserted else { continue }
            queue += (modules[next]?.dependencies ?? []).filter { $0 != avoided }
        }
        return seen
    }

    /// One dependency path from `name` to `target` that does not go through `avoided`, for a
    /// readable failure.
    func path(from name: String, to target: String, avoiding avoided: String? = nil) -> [String] {
        var previous: [String: String] = [:]
        var queue = [name]
        var seen: Set<String> = [name]
        if let avoided { seen.insert(avoided) }
        while !queue.isEmpty {
            let current = queue.removeFirst()
            if current == target {
                var path = [current]
                while let step = previous[path[0]] { path.insert(step, at: 0) }
                return path
            }
            for next in modules[current]?.dependencies ?? [] where seen.insert(next).inserted {
                previous[next] = current
                queue.append(next)
            }
        }
        return []
    }
}

struct ArchitectureError: Error, CustomStringConvertible {
    let description: String
}

/// The edges docs/architecture.md forbids.
enum Layering {
    /// The module that is the whole daemon: only `rivetd` links it.
    static let daemon = "RivetDaemon"
    static let daemonExecutable = "rivetd"

    /// The Swift wrappers of C libraries and their system-library modules.
    static let sqlite: Set<String> = ["SQLiteKit", "CSQLite"]
    static let curl: Set<String> = ["CurlKit", "CCurl"]
    static let avahi: Set<String> = ["AvahiKit", "CAvahi"]
    static let openssl: Set<String> = ["OpenSSLKit", "COpenSSL"]
    static let qrencode: Set<String> = ["QRCodeKit", "CQRencode"]
    /// The Swift wrapper of each C module: the only module that names it as a dependency.
    static let wrapper = [
        "CSQLite": "SQLiteKit", "CCurl": "CurlKit", "CAvahi": "AvahiKit", "COpenSSL": "OpenSSLKit", "CQRencode": "QRCodeKit",
    ]

    /// Pure modules (no socket, file, database or clock of their own), and a few that are not
    /// but stay clear of some layers, and what each must not reach (a name ending in `*`
    /// stands for every module it starts). Pairing values, the RVD1 machines and the gateway
    /// machine hash and draw random bytes through OpenSSLKit, so they may reach it; nothing
    /// pure reaches SQLite, curl, Avahi or libqrencode.
    static let forbidden: [String: Set<String>] = [
        // Pure and at the bottom (hex, Base64, JSON, byte-wise text search, the display rule for
        // outside text): it reaches no module at all (`*` matches every one), not even the
        // system layer. `importViolations(in:)` checks its files' imports too.
        "ByteText": ["*"],
        // The one error shape, under every module that defines an error: it reaches no module.
        "CodedError": ["*"],
        // Pure and at the bottom too: the one clock's protocol and the wall-clock value; its
        // system side is SystemKit's `SystemClock`. Its files' imports are checked as ByteText's.
        "Timekeeping": ["*"],
        // Pure collections (the FIFO queue under the device library, the gateway and the
        // daemon): it reaches no module either.
        "Queueing": ["*"],
        "RivetWire": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        "RivetDevice": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        // Not pure (descriptors, a wake-up pipe), but the byte stream under the device library
        // reaches no C library.
        "RivetDeviceIO": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        "RivetIdentity": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        "RivetSchema": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        "Backoff": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        "SystemKit": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        "ThreadSupport": sqlite.union(curl).union(avahi).union(openssl).union(qrencode),
        "RivetPairing": sqlite.union(curl).union(avahi).union(qrencode),
        "RivetSession": sqlite.union(curl).union(avahi).union(qrencode),
        "RivetGateway": sqlite.union(curl).union(avahi).union(qrencode),
        // Not pure (a Unix socket), but the control protocol and its client need no registry.
        "RivetControl": sqlite.union(curl).union(avahi).union(qrencode),
        // Not pure either (sockets, TLS), but a companion and the client transport it connects
        // with hold a credential, not the desktop's registry.
        "RivetTransport": sqlite.union(curl).union(avahi).union(qrencode),
        "RivetCompanion": sqlite.union(curl).union(avahi).union(qrencode),
        // rivet-pair's two jobs: the companion's pairs over TLS and stores a credential, and
        // reaches nothing of the desktop's (registry, control socket, QR code); the desktop's
        // works through the control socket and the registry, and dials no device connection.
        "RivetPairCompanion": sqlite.union(curl).union(avahi).union(qrencode).union(desktopSide),
        "RivetPairDesktop": curl.union(avahi).union(companionSide),
        // Rastrillo, top to bottom: the tools, their CLI kit, the Foundation-facing product and
        // the test transport over RastrilloHTTP (the libcurl client) over RastrilloCore (pure:
        // origins, errors, the event-stream parser, connectivity, reconnect). None reaches
        // SQLite, Avahi or a Rivet module; no layer reaches one above it.
        "RastrilloCore": sqlite.union(curl).union(avahi).union(openssl).union(qrencode).union(rivet)
            .union(["RastrilloHTTP", "Rastrillo", "RastrilloCLI", "RastrilloTestSupport"]),
        "RastrilloHTTP": sqlite.union(avahi).union(qrencode).union(rivet).union(["Rastrillo", "RastrilloCLI", "RastrilloTestSupport"]),
        "Rastrillo": sqlite.union(avahi).union(qrencode).union(rivet).union(["RastrilloCLI", "RastrilloTestSupport"]),
        "RastrilloTestSupport": sqlite.union(avahi).union(qrencode).union(rivet).union(["RastrilloCLI"]),
        "RastrilloCLI": sqlite.union(avahi).union(qrencode).union(rivet),
        "rastrillo-fetch": sqlite.union(avahi).union(qrencode).union(rivet),
        "rastrillo-stream": sqlite.union(avahi).union(qrencode).union(rivet),
        "rastrillo-download": sqlite.union(avahi).union(qrencode).union(rivet),
        // The QR code wrapper draws a text: it reaches no other C library and no Rivet or
        // Rastrillo module (rivet-pair reaches it, not the other way round).
        "QRCodeKit": sqlite.union(curl).union(avahi).union(openssl).union(rivet).union(["Rastrillo*"]),
    ]

    /// What only the desktop side of pairing uses: the registry, the control socket and the
    /// daemon itself.
    static let desktopSide: Set<String> = ["RivetRegistry", "RivetControl", daemon]

    /// What only the companion side of pairing uses: the TLS client, the session machines over
    /// it and the companion modules.
    static let companionSide: Set<String> = ["RivetTransport", "RivetSession", "RivetCompanion", "RivetPairCompanion", daemon]

    /// Every module whose name starts with `Rivet` (the device side), for the Rastrillo
    /// modules to stay clear of.
    static let rivet: Set<String> = ["Rivet*"]

    /// Modules that may reach a module only through one other: the Rastrillo modules above the
    /// HTTP layer reach libcurl only through RastrilloHTTP, never by an edge of their own.
    static let onlyThrough: [(modules: [String], reach: Set<String>, through: String)] = [
        (
            ["Rastrillo", "RastrilloCLI", "RastrilloTestSupport", "rastrillo-fetch", "rastrillo-stream", "rastrillo-download"],
            curl, "RastrilloHTTP"
        )
    ]

    /// Modules that reach a C wrapper only through the library in front of it, never by a target
    /// dependency or an import of their own: rivet-browse and the daemon speak `RivetDiscovery`'s
    /// types (`RivetBrowser`, `RivetAdvertiser`, `RivetServiceInstance`, `RivetHostAddress`,
    /// `RivetDiscoveryError`), never AvahiKit's.
    static let neverDirectly: [String: (banned: Set<String>, through: String)] = [
        "rivet-browse": (avahi, "RivetDiscovery"),
        "RivetDaemon": (avahi, "RivetDiscovery"),
        "rivetd": (avahi, "RivetDiscovery"),
    ]

    /// The module whose public API stands in front of AvahiKit, and the prefix of the names of
    /// AvahiKit's types, none of which may appear in a public declaration there.
    static let discoveryModule = "RivetDiscovery"
    static let avahiTypePrefix = try! NSRegularExpression(pattern: #"\bAvahi[A-Z][A-Za-z]*"#)

    /// A line for each public declaration of `RivetDiscovery` (a line that starts with `public`,
    /// or `public` after attributes) that names an AvahiKit type (`path:line: … names AvahiX`):
    /// its callers must never need AvahiKit's types.
    static func publicAvahiViolations(in files: [(path: String, text: String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files.sorted(by: { $0.path < $1.path }) where path.hasPrefix(discoveryModule + "/") {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.drop { $0 == " " }
                guard code.hasPrefix("public ") || code.contains(" public ") && code.hasPrefix("@") else { continue }
                let declaration = String(code)
                let range = NSRange(declaration.startIndex..., in: declaration)
                for match in avahiTypePrefix.matches(in: declaration, range: range) {
                    guard let name = Range(match.range, in: declaration).map({ String(declaration[$0]) }) else { continue }
                    found.append("\(path):\(number + 1): a public declaration of \(discoveryModule) names \(name)")
                }
            }
        }
        return found
    }

    /// A line for each direct dependency of a module of `neverDirectly` on what it must reach
    /// only through another module.
    static func directViolations(in graph: ModuleGraph) -> [String] {
        var found: [String] = []
        for (name, rule) in neverDirectly.sorted(by: { $0.key < $1.key }) {
            guard let module = graph.modules[name] else {
                found.append("\(name) is not a module of the package (renamed? update Layering.neverDirectly)")
                continue
            }
            for dependency in module.dependencies.sorted() where rule.banned.contains(dependency) {
                found.append("\(name) depends on \(dependency) directly; it reaches it only through \(rule.through)")
            }
        }
        return found
    }

    /// A line for each import, in a file of a module of `neverDirectly`, of what that module
    /// must reach only through another (`path:line: … imports X`).
    static func directImportViolations(in files: [(path: String, text: String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files.sorted(by: { $0.path < $1.path }) {
            guard let (name, rule) = neverDirectly.first(where: { path.hasPrefix($0.key + "/") }) else { continue }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line)
                guard let match = importLine.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)),
                    let imported = Range(match.range(at: 1), in: code).map({ String(code[$0]) }),
                    rule.banned.contains(imported)
                else { continue }
                found.append("\(path):\(number + 1): \(name) imports \(imported); it reaches it only through \(rule.through)")
            }
        }
        return found
    }

    /// Every forbidden edge of `graph`, one line each; empty when the layering holds.
    static func violations(in graph: ModuleGraph) -> [String] {
        var found: [String] = []
        for name in forbidden.keys.sorted() where graph.modules[name] == nil {
            found.append("\(name) is not a module of the package (renamed? update Layering.forbidden)")
        }
        for module in graph.modules.values.sorted(by: { $0.name < $1.name }) {
            for dependency in module.dependencies.sorted() where wrapper[dependency].map({ $0 != module.name }) ?? false {
                found.append("\(module.name) depends on \(dependency), which only its wrapper \(wrapper[dependency]!) may")
            }
        }
        if graph.modules[daemon] == nil {
            found.append("\(daemon) is not a module of the package (renamed? update Layering.daemon)")
        }
        for module in graph.modules.values.sorted(by: { $0.name < $1.name })
        where module.kind == "executable" && module.name != daemonExecutable {
            if graph.closure(of: module.name).contains(daemon) {
                found.append(
                    "executable \(module.name) depends on \(daemon): "
                        + graph.path(from: module.name, to: daemon).joined(separator: " → "))
            }
        }
        for (name, banned) in forbidden.sorted(by: { $0.key < $1.key }) {
            let reachedModules = graph.closure(of: name).filter { reached in banned.contains { matches(reached, $0) } }
            // A C module reached through its wrapper is the wrapper's edge: report that one.
            for reached in reachedModules.sorted() where !reachedModules.contains(wrapper[reached] ?? "") {
                found.append(
                    "pure module \(name) depends on \(reached): "
                        + graph.path(from: name, to: reached).joined(separator: " → "))
            }
        }
        for rule in onlyThrough {
            for name in rule.modules {
                let reached = graph.closure(of: name, avoiding: rule.through).intersection(rule.reach)
                for module in reached.sorted() where !reached.contains(wrapper[module] ?? "") {
                    found.append(
                        "\(name) depends on \(module) other than through \(rule.through): "
                            + graph.path(from: name, to: module, avoiding: rule.through).joined(separator: " → "))
                }
            }
        }
        return found
    }

    /// The pure modules whose source files are checked too, not only their target dependencies:
    /// a file may import the standard library (`standardLibrary`), these modules and
    /// `allowedInPure`, nothing else. An `import Glibc` or `import Foundation` needs no target
    /// dependency, so the graph alone cannot show it. Each lives under Sources/Core
    /// (`coreViolations(coreFolders:)`).
    static let pureByImports: Set<String> = [
        "ByteText", "CodedError", "Timekeeping", "Queueing", "Backoff", "RivetWire", "RivetSchema", "RivetIdentity", "RivetGateway",
        "RivetDevice", "RivetPairing", "RivetSession", "RastrilloCore",
    ]

    /// What a pure module may import beyond the standard library and the pure modules: digests
    /// and HMAC are computation, not I/O (randomness stays injected).
    static let allowedInPure: Set<String> = ["OpenSSLKit"]

    /// The standard library's own modules, Synchronization included.
    static let standardLibrary: Set<String> = ["Swift", "_Concurrency", "Synchronization"]

    /// An `import` line, whatever its attributes (`@preconcurrency`, `@testable`), access level
    /// and kind (`import struct Glibc.stat`); the module is the first group. A comment line does
    /// not match (it starts with `//`).
    static let importLine = try! NSRegularExpression(
        pattern: #"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#)

    /// Every import of a module outside `standardLibrary` and `pureByImports` in a file of a
    /// module of `pureByImports`, one line each (`path:line: … imports X`), and a line for each
    /// such module with no file at all (renamed or moved). `files` maps a path relative to
    /// Sources/ to its text (`SystemLayer.sources()`).
    static func importViolations(in files: [(path: String, text: String)], pure: Set<String> = pureByImports) -> [String] {
        var found: [String] = []
        for module in pure.sorted() where !files.contains(where: { $0.path.hasPrefix(module + "/") }) {
            found.append("pure module \(module) has no source file under Sources/ (renamed? update Layering.pureByImports)")
        }
        for (path, text) in files.sorted(by: { $0.path < $1.path }) {
            guard let module = pure.sorted().first(where: { path.hasPrefix($0 + "/") }) else { continue }
            for (number, name) in impureImports(in: text, pure: pure) {
                found.append("\(path):\(number): pure module \(module) imports \(name)")
            }
        }
        return found
    }

    /// The imports in `text` of modules outside `standardLibrary`, `pure` and `allowedInPure`,
    /// with their line numbers (from 1).
    static func impureImports(in text: String, pure: Set<String> = pureByImports) -> [(line: Int, module: String)] {
        var found: [(line: Int, module: String)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = String(line)
            guard let match = importLine.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)),
                let name = Range(match.range(at: 1), in: code).map({ String(code[$0]) })
            else { continue }
            if !standardLibrary.contains(name) && !pure.contains(name) && !allowedInPure.contains(name) {
                found.append((number + 1, name))
            }
        }
        return found
    }

    /// A line for each folder under Sources/Core (`coreFolders`) that is not in `pureByImports`,
    /// and for each module of that list that is not under Sources/Core: the Core layer folder
    /// holds the pure modules and nothing else.
    static func coreViolations(coreFolders: Set<String>) -> [String] {
        return coreFolders.subtracting(pureByImports).sorted().map {
            "Sources/Core/\($0) is not in Layering.pureByImports: a module in Core imports only pure modules"
        }
            + pureByImports.subtracting(coreFolders).sorted().map {
                "pure module \($0) is not under Sources/Core: move its folder there"
            }
    }

    /// A line for each target dependency of a module of `pureByImports` that is neither pure nor
    /// in `allowedInPure`: the graph's half of the import check.
    static func pureDependencyViolations(in graph: ModuleGraph) -> [String] {
        var found: [String] = []
        for name in pureByImports.sorted() {
            guard let module = graph.modules[name] else {
                found.append("pure module \(name) is not a module of the package (renamed? update Layering.pureByImports)")
                continue
            }
            for dependency in module.dependencies.sorted()
            where !pureByImports.contains(dependency) && !allowedInPure.contains(dependency) {
                found.append("pure module \(name) depends on \(dependency), which is not pure")
            }
        }
        return found
    }

    /// The module folders under Sources/Core.
    static func coreFolders() throws -> Set<String> {
        let core = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Core")
        return Set(try FileManager.default.contentsOfDirectory(atPath: core.path).filter { !$0.hasPrefix(".") })
    }

    /// Whether `module` is `pattern`, or starts with it when the pattern ends in `*`.
    static func matches(_ module: String, _ pattern: String) -> Bool {
        pattern.hasSuffix("*") ? module.hasPrefix(pattern.dropLast()) : module == pattern
    }
}

/// Runs `swift package describe --type json` on this package, in a scratch directory of its own
/// so that it never waits for the lock of the `swift test` that runs it.
func describePackage() throws -> Data {
    let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    let swift = try swiftExecutable()
    let scratch = try TemporaryDirectory()
    defer { scratch.remove() }
    let run = try ToolProcess.runProgram(
        at: swift,
        ["package", "--package-path", packageRoot, "--scratch-path", scratch.path, "describe", "--type", "json"],
        timeout: .seconds(300))
    guard run.status == 0 else {
        throw ArchitectureError(
            description: "\(swift) package describe exited with status \(run.status): \(run.stderr)")
    }
    return Data(run.stdout.utf8)
}

/// The toolchain's `swift`: /opt/swift/usr/bin/swift, else the first `swift` on PATH.
func swiftExecutable() throws -> String {
    let environment = ProcessInfo.processInfo.environment
    let candidates =
        ["/opt/swift/usr/bin/swift"]
        + (environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swift" }
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw ArchitectureError(
            description: "no swift executable at /opt/swift/usr/bin/swift or on PATH; the layering cannot be checked")
    }
    return found
}

@Suite struct LayeringTests {
    /// `swift package describe` runs on a thread of its own: it takes tens of seconds on a loaded
    /// machine, and a synchronous test would hold one of the cooperative pool's threads (two on
    /// two cores) all that time, stalling every other test.
    @Test func thePackageKeepsItsLayers() async throws {
        let json = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try describePackage() }) }.start()
        }
        let graph = try ModuleGraph(describeJSON: json)
        #expect(graph.modules[Layering.daemonExecutable] != nil)
        let violations = Layering.violations(in: graph) + Layering.pureDependencyViolations(in: graph)
            + Layering.directViolations(in: graph)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// rivet-browse's files import no AvahiKit (`Layering.neverDirectly`).
    @Test func rivetBrowseImportsNoAvahiKit() throws {
        let files = try SystemLayer.sources()
        #expect(files.contains { $0.path.hasPrefix("rivet-browse/") })
        let violations = Layering.directImportViolations(in: files)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// Planted: rivet-browse, the daemon and rivetd depending on AvahiKit and importing it (and
    /// CAvahi) again; RivetDiscovery's own edge to AvahiKit is allowed.
    @Test func rivetBrowseReachingAvahiDirectlyIsReported() {
        let graph = ModuleGraph([
            .init(name: "rivet-browse", kind: "executable", dependencies: ["CommandLineKit", "RivetDiscovery", "AvahiKit"]),
            .init(name: "RivetDiscovery", kind: "library", dependencies: ["AvahiKit"]),
            .init(name: "RivetDaemon", kind: "library", dependencies: ["RivetDiscovery", "CAvahi"]),
            .init(name: "rivetd", kind: "executable", dependencies: ["AvahiKit"]),
        ])
        #expect(
            Layering.directViolations(in: graph) == [
                "RivetDaemon depends on CAvahi directly; it reaches it only through RivetDiscovery",
                "rivet-browse depends on AvahiKit directly; it reaches it only through RivetDiscovery",
                "rivetd depends on AvahiKit directly; it reaches it only through RivetDiscovery",
            ])
        #expect(Layering.directViolations(in: ModuleGraph([])) == [
            "RivetDaemon is not a module of the package (renamed? update Layering.neverDirectly)",
            "rivet-browse is not a module of the package (renamed? update Layering.neverDirectly)",
            "rivetd is not a module of the package (renamed? update Layering.neverDirectly)",
        ])
        let files: [(path: String, text: String)] = [
            ("rivet-browse/Browse.swift", "import CommandLineKit\nimport AvahiKit\nimport RivetDiscovery"),
            ("rivet-browse/Lines.swift", "@preconcurrency internal import CAvahi"),
            ("rivet-browse-extra/A.swift", "import AvahiKit"),
            ("RivetDiscovery/RivetBrowser.swift", "import AvahiKit"),
        ]
        #expect(
            Layering.directImportViolations(in: files) == [
                "rivet-browse/Browse.swift:2: rivet-browse imports AvahiKit; it reaches it only through RivetDiscovery",
                "rivet-browse/Lines.swift:1: rivet-browse imports CAvahi; it reaches it only through RivetDiscovery",
            ])
    }

    /// RivetDiscovery's public declarations name none of AvahiKit's types.
    @Test func discoveryPublicAPINamesNoAvahiType() throws {
        let files = try SystemLayer.sources()
        #expect(files.contains { $0.path.hasPrefix("RivetDiscovery/") })
        let violations = Layering.publicAvahiViolations(in: files)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// Planted: a public property, a public initializer's parameter and an attributed public
    /// function naming Avahi types; internal ones, comments and other modules are not reported.
    @Test func anAvahiTypeInDiscoverysPublicAPIIsReported() {
        let files: [(path: String, text: String)] = [
            (
                "RivetDiscovery/A.swift",
                "public struct A {\n    public let address: AvahiHostAddress\n    let inner: AvahiInterface\n"
                    + "    public init(p: AvahiIPProtocol = .unspecified) {}\n    @discardableResult public func e() -> AvahiError? { nil }\n"
                    + "    /// public AvahiClient in a comment\n}"
            ),
            ("RivetDaemon/B.swift", "public let x: AvahiHostAddress"),
        ]
        #expect(
            Layering.publicAvahiViolations(in: files) == [
                "RivetDiscovery/A.swift:2: a public declaration of RivetDiscovery names AvahiHostAddress",
                "RivetDiscovery/A.swift:4: a public declaration of RivetDiscovery names AvahiIPProtocol",
                "RivetDiscovery/A.swift:5: a public declaration of RivetDiscovery names AvahiError",
            ])
    }

    /// The pure modules' files import the standard library alone (`Layering.pureByImports`).
    @Test func pureModulesImportOnlyTheStandardLibrary() throws {
        let files = try SystemLayer.sources()
        #expect(files.contains { $0.path.hasPrefix("ByteText/") })
        let violations = Layering.importViolations(in: files)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// Sources/Core holds the pure modules (and those listed as not yet pure), and every pure
    /// module lives there.
    @Test func theCoreFolderHoldsThePureModules() throws {
        let folders = try Layering.coreFolders()
        #expect(folders.contains("ByteText"))
        let violations = Layering.coreViolations(coreFolders: folders)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// Planted: a stray module folder in Core, and a pure module whose folder left Core.
    @Test func aCoreFolderOutsideThePureListAndAPureModuleOutsideCoreAreReported() {
        let folders = Layering.pureByImports.subtracting(["RivetWire"]).union(["RivetStray"])
        #expect(
            Layering.coreViolations(coreFolders: folders) == [
                "Sources/Core/RivetStray is not in Layering.pureByImports: a module in Core imports only pure modules",
                "pure module RivetWire is not under Sources/Core: move its folder there",
            ])
    }

    /// Planted: the gateway depending on the pairing registry, an identity file importing
    /// SystemKit, a pairing file importing Foundation and the netlink observer back in
    /// RastrilloCore (Glibc, ThreadSupport); OpenSSLKit and other pure modules are allowed.
    @Test func aPureModuleDependingOnOrImportingAnImpureOneIsReported() {
        let graph = ModuleGraph(
            Layering.pureByImports.map { ModuleGraph.Module(name: $0, kind: "library", dependencies: []) }
                .filter { $0.name != "RivetGateway" && $0.name != "RivetIdentity" } + [
                    .init(name: "RivetGateway", kind: "library", dependencies: ["RivetWire", "RivetPairing", "RivetRegistry"]),
                    .init(name: "RivetIdentity", kind: "library", dependencies: ["ByteText", "OpenSSLKit"]),
                ])
        #expect(Layering.pureDependencyViolations(in: graph) == ["pure module RivetGateway depends on RivetRegistry, which is not pure"])
        let files: [(path: String, text: String)] =
            Layering.pureByImports.map { (path: "\($0)/A.swift", text: "import ByteText") } + [
                ("RivetIdentity/DeviceID.swift", "import ByteText\nimport OpenSSLKit\nimport SystemKit"),
                ("RivetPairing/Link.swift", "import RivetIdentity\nimport Foundation"),
                ("RastrilloCore/NativeOrigin.swift", "import ByteText\nimport Backoff"),
                ("RastrilloCore/RouteNetlinkObserver.swift", "import Glibc\nimport Synchronization\nimport ThreadSupport"),
            ]
        #expect(
            Layering.importViolations(in: files) == [
                "RastrilloCore/RouteNetlinkObserver.swift:1: pure module RastrilloCore imports Glibc",
                "RastrilloCore/RouteNetlinkObserver.swift:3: pure module RastrilloCore imports ThreadSupport",
                "RivetIdentity/DeviceID.swift:3: pure module RivetIdentity imports SystemKit",
                "RivetPairing/Link.swift:2: pure module RivetPairing imports Foundation",
            ])
    }

    /// Planted: the clock's protocol importing Foundation for `Date` and Glibc for the time.
    @Test func anImportPlantedInTheClocksPureModuleIsReported() {
        let files: [(path: String, text: String)] = [
            ("ByteText/Hex.swift", "public enum Hex {}"),
            ("Timekeeping/RivetClock.swift", "import Foundation\nimport Glibc\npublic protocol RivetClock: Clock {}"),
        ]
        #expect(
            Layering.importViolations(in: files, pure: ["ByteText", "Timekeeping"]) == [
                "Timekeeping/RivetClock.swift:1: pure module Timekeeping imports Foundation",
                "Timekeeping/RivetClock.swift:2: pure module Timekeeping imports Glibc",
            ])
    }

    @Test func anImportPlantedInAPureModuleIsReported() {
        let files: [(path: String, text: String)] = [
            ("ByteText/Hex.swift", "import Glibc\n\npublic enum Hex {}"),
            ("ByteText/Search.swift", "#if canImport(Glibc)\n@preconcurrency internal import Foundation\n#endif"),
            ("ByteText/Error.swift", "import struct SystemKit.SystemError"),
            ("ByteText/Fine.swift", "import Swift\nimport Synchronization\n// import Glibc in a comment\nlet important = 1"),
            ("SystemKit/Calls.swift", "import Glibc"),
            ("CodedError/CodedError.swift", "public protocol CodedError {}"),
        ]
        #expect(
            Layering.importViolations(in: files, pure: ["ByteText"]) == [
                "ByteText/Error.swift:1: pure module ByteText imports SystemKit",
                "ByteText/Hex.swift:1: pure module ByteText imports Glibc",
                "ByteText/Search.swift:2: pure module ByteText imports Foundation",
            ])
        #expect(
            Layering.importViolations(in: [("SystemKit/Calls.swift", "import Glibc")], pure: ["ByteText"]) == [
                "pure module ByteText has no source file under Sources/ (renamed? update Layering.pureByImports)"
            ])
    }

    /// CodedError, under every module's error type, imports and reaches nothing: planted here, an
    /// `import Glibc` in its file and a dependency on ByteText.
    @Test func anImportOrADependencyPlantedInCodedErrorIsReported() {
        #expect(
            Layering.importViolations(in: [
                ("ByteText/Hex.swift", "public enum Hex {}"),
                ("CodedError/CodedError.swift", "import Glibc\n\npublic protocol CodedError {}"),
            ], pure: ["ByteText", "CodedError"]) == ["CodedError/CodedError.swift:1: pure module CodedError imports Glibc"])
        let graph = Self.graph(where: "CodedError", dependsOn: ["ByteText"])
        #expect(Layering.violations(in: graph) == ["pure module CodedError depends on ByteText: CodedError → ByteText"])
    }

    @Test func byteTextReachingAnyModuleIsReported() {
        let graph = Self.graph(where: "ByteText", dependsOn: ["SystemKit"])
        #expect(Layering.violations(in: graph) == ["pure module ByteText depends on SystemKit: ByteText → SystemKit"])
    }

    /// Every module `Layering` names, without dependencies, but `module`, which depends on
    /// `dependencies`.
    static func graph(where module: String, dependsOn dependencies: [String]) -> ModuleGraph {
        ModuleGraph(
            Layering.forbidden.keys.filter { $0 != module }.map {
                ModuleGraph.Module(name: $0, kind: "library", dependencies: [])
            } + [
                .init(name: "RivetDaemon", kind: "library", dependencies: []),
                .init(name: module, kind: "library", dependencies: dependencies),
            ])
    }

    @Test func aCModuleOutsideItsWrapperIsReported() {
        let graph = ModuleGraph(
            Layering.forbidden.keys.map { ModuleGraph.Module(name: $0, kind: "library", dependencies: []) } + [
                .init(name: "RivetDaemon", kind: "library", dependencies: []),
                .init(name: "QRCodeKit", kind: "library", dependencies: ["CQRencode"]),
                .init(name: "CQRencode", kind: "system-target", dependencies: []),
                .init(name: "rivet-pair", kind: "executable", dependencies: ["QRCodeKit", "CQRencode"]),
            ])
        #expect(Layering.violations(in: graph) == ["rivet-pair depends on CQRencode, which only its wrapper QRCodeKit may"])
    }

    @Test func aPureModuleOrTheWrapperReachingQRCodeKitIsReported() {
        let graph = ModuleGraph(
            Layering.forbidden.keys.filter { $0 != "RivetPairing" && $0 != "QRCodeKit" }.map {
                ModuleGraph.Module(name: $0, kind: "library", dependencies: [])
            } + [
                .init(name: "RivetDaemon", kind: "library", dependencies: []),
                .init(name: "RivetPairing", kind: "library", dependencies: ["QRCodeKit"]),
                .init(name: "QRCodeKit", kind: "library", dependencies: ["CQRencode", "OpenSSLKit"]),
                .init(name: "CQRencode", kind: "system-target", dependencies: []),
                .init(name: "OpenSSLKit", kind: "library", dependencies: []),
            ])
        #expect(
            Layering.violations(in: graph) == [
                "pure module QRCodeKit depends on OpenSSLKit: QRCodeKit → OpenSSLKit",
                "pure module RivetPairing depends on QRCodeKit: RivetPairing → QRCodeKit",
            ])
    }

    @Test func anExecutableReachingTheDaemonThroughALibraryIsReported() {
        let graph = ModuleGraph(
            Layering.forbidden.keys.map { ModuleGraph.Module(name: $0, kind: "library", dependencies: []) } + [
                .init(name: "RivetDaemon", kind: "library", dependencies: []),
                .init(name: "rivetd", kind: "executable", dependencies: ["RivetDaemon"]),
                .init(name: "Middle", kind: "library", dependencies: ["RivetDaemon"]),
                .init(name: "rivet-pair", kind: "executable", dependencies: ["Middle"]),
            ])
        #expect(Layering.violations(in: graph) == ["executable rivet-pair depends on RivetDaemon: rivet-pair → Middle → RivetDaemon"])
    }

    @Test func aPureModuleReachingSQLiteIsReported() {
        let graph = ModuleGraph(
            Layering.forbidden.keys.filter { $0 != "RivetSession" }.map {
                ModuleGraph.Module(name: $0, kind: "library", dependencies: [])
            } + [
                .init(name: "RivetDaemon", kind: "library", dependencies: []),
                .init(name: "RivetSession", kind: "library", dependencies: ["Store"]),
                .init(name: "Store", kind: "library", dependencies: ["SQLiteKit"]),
                .init(name: "SQLiteKit", kind: "library", dependencies: []),
            ])
        #expect(Layering.violations(in: graph) == ["pure module RivetSession depends on SQLiteKit: RivetSession → Store → SQLiteKit"])
    }

    @Test func theCompanionReachingTheRegistryOrControlSocketIsReported() {
        let graph = ModuleGraph(
            Layering.forbidden.keys.filter { $0 != "RivetPairCompanion" && $0 != "RivetControl" }.map {
                ModuleGraph.Module(name: $0, kind: "library", dependencies: [])
            } + [
                .init(name: "RivetDaemon", kind: "library", dependencies: []),
                .init(name: "RivetPairCompanion", kind: "library", dependencies: ["RivetControl", "RivetRegistry", "RivetTransport"]),
                .init(name: "RivetControl", kind: "library", dependencies: []),
                .init(name: "RivetRegistry", kind: "library", dependencies: ["SQLiteKit"]),
                .init(name: "SQLiteKit", kind: "library", dependencies: ["CSQLite"]),
                .init(name: "CSQLite", kind: "system-target", dependencies: []),
            ])
        #expect(
            Layering.violations(in: graph) == [
                "pure module RivetPairCompanion depends on RivetControl: RivetPairCompanion → RivetControl",
                "pure module RivetPairCompanion depends on RivetRegistry: RivetPairCompanion → RivetRegistry",
                "pure module RivetPairCompanion depends on SQLiteKit: RivetPairCompanion → RivetRegistry → SQLiteKit",
            ])
    }

    @Test func theDesktopReachingTheTLSClientIsReported() {
        let graph = ModuleGraph(
            Layering.forbidden.keys.filter { $0 != "RivetPairDesktop" && $0 != "RivetPairCompanion" }.map {
                ModuleGraph.Module(name: $0, kind: "library", dependencies: [])
            } + [
                .init(name: "RivetDaemon", kind: "library", dependencies: []),
                .init(name: "RivetPairDesktop", kind: "library", dependencies: ["RivetControl", "RivetPairCompanion", "QRCodeKit"]),
                .init(name: "RivetPairCompanion", kind: "library", dependencies: ["RivetTransport"]),
            ])
        #expect(
            Layering.violations(in: graph) == [
                "pure module RivetPairDesktop depends on RivetPairCompanion: RivetPairDesktop → RivetPairCompanion",
                "pure module RivetPairDesktop depends on RivetTransport: RivetPairDesktop → RivetPairCompanion → RivetTransport",
            ])
    }

    /// The graph of the Rastrillo modules as they should be, with `changes` applied: each entry
    /// replaces a module's dependencies.
    private func rastrilloGraph(_ changes: [String: [String]]) -> ModuleGraph {
        var dependencies: [String: [String]] = Dictionary(uniqueKeysWithValues: Layering.forbidden.keys.map { ($0, []) })
        dependencies["RastrilloCore"] = ["Backoff"]
        dependencies["RastrilloHTTP"] = ["CurlKit", "OpenSSLKit", "RastrilloCore", "ThreadSupport"]
        dependencies["Rastrillo"] = ["RastrilloHTTP"]
        dependencies["RastrilloCLI"] = ["RastrilloHTTP", "RastrilloCore", "CommandLineKit"]
        dependencies["CurlKit"] = ["CCurl", "ThreadSupport"]
        dependencies["OpenSSLKit"] = ["COpenSSL"]
        dependencies["RivetDaemon"] = []
        dependencies.merge(changes) { _, new in new }
        return ModuleGraph(dependencies.map { ModuleGraph.Module(name: $0.key, kind: "library", dependencies: $0.value) })
    }

    @Test func theRastrilloLayersAsDesignedPass() {
        #expect(Layering.violations(in: rastrilloGraph([:])) == [])
    }

    @Test func aReversedRastrilloEdgeIsReported() {
        let graph = rastrilloGraph(["RastrilloCore": ["Backoff", "RastrilloHTTP"], "RastrilloHTTP": ["CurlKit", "ThreadSupport"]])
        #expect(
            Layering.violations(in: graph) == [
                "pure module RastrilloCore depends on CurlKit: RastrilloCore → RastrilloHTTP → CurlKit",
                "pure module RastrilloCore depends on RastrilloHTTP: RastrilloCore → RastrilloHTTP",
            ])
    }

    @Test func curlOutsideTheHTTPLayerAndRivetModulesAreReported() {
        let graph = rastrilloGraph([
            "RastrilloCLI": ["RastrilloHTTP", "CurlKit"], "RastrilloHTTP": ["CurlKit", "RastrilloCore", "RivetPairing"],
            "RivetPairing": ["OpenSSLKit"],
        ])
        #expect(
            Layering.violations(in: graph) == [
                "pure module Rastrillo depends on RivetPairing: Rastrillo → RastrilloHTTP → RivetPairing",
                "pure module RastrilloCLI depends on RivetPairing: RastrilloCLI → RastrilloHTTP → RivetPairing",
                "pure module RastrilloHTTP depends on RivetPairing: RastrilloHTTP → RivetPairing",
                "RastrilloCLI depends on CurlKit other than through RastrilloHTTP: RastrilloCLI → CurlKit",
            ])
    }
}
