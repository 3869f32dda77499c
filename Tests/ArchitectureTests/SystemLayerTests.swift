import Foundation
import Testing

/// What only the system layer may write: SystemKit owns EINTR and pipes; ThreadSupport owns
/// starting a thread; ByteText (pure) owns hex digits; and what only a C library's wrapper may
/// write: its `import` (`Layering.wrapper`). ByteText also owns Base64 alphabets and JSON, which
/// nothing reads or writes with Foundation. Comment lines are not code and are skipped.
enum SystemLayer {
    struct Rule {
        let what: String
        let pattern: NSRegularExpression
        /// The directory under Sources/ where the pattern belongs.
        let owner: String
    }

    static let rules: [Rule] = [
        rule("an EINTR check (use SystemKit's retryingInterrupts)", #"\bEINTR\b"#, owner: "SystemKit"),
        rule("a pipe made by hand (use SystemKit's PipeEnds)", #"(?<![A-Za-z0-9_.])pipe2?\s*\("#, owner: "SystemKit"),
        rule("a hex digit table (use ByteText's Hex)", #"0123456789abcdef"#, owner: "ByteText"),
        rule(
            "a Base64 alphabet (use ByteText's Base64)", #"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"#,
            owner: "ByteText"),
        rule(
            "Foundation JSON (use ByteText's JSONParser and JSONWriter)", #"\b(JSONSerialization|JSONEncoder|JSONDecoder)\b"#,
            owner: "ByteText"),
        rule("a thread started by hand (use ThreadSupport)", #"\bpthread_create\s*\("#, owner: "ThreadSupport"),
        rule(
            "a Foundation Thread (use ThreadSupport)", #"(?<![A-Za-z0-9_.])Thread\s*(\(|\{)|Thread\.detachNewThread"#,
            owner: "ThreadSupport"),
    ] + wrapperImports

    /// An `import` of each C module, which only its wrapper may write.
    private static let wrapperImports = Layering.wrapper.sorted(by: { $0.key < $1.key }).map { module, wrapper in
        rule("an import of \(module) (only \(wrapper) wraps it)", #"\bimport\s+\#(module)\b"#, owner: wrapper)
    }

    private static func rule(_ what: String, _ pattern: String, owner: String) -> Rule {
        Rule(what: what, pattern: try! NSRegularExpression(pattern: pattern), owner: owner)
    }

    /// One line per match outside its owner: `path:line: what`. `files` maps a path relative
    /// to Sources/ to its text.
    static func violations(in files: [(path: String, text: String)]) -> [String] {
        var found: [String] = []
        for (path, text) in files.sorted(by: { $0.path < $1.path }) {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line)
                if code.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                let range = NSRange(code.startIndex..., in: code)
                for rule in rules where !path.hasPrefix(rule.owner + "/") {
                    if rule.pattern.firstMatch(in: code, range: range) != nil {
                        found.append("\(path):\(number + 1): \(rule.what)")
                    }
                }
            }
        }
        return found
    }

    /// The folders directly under Sources/ that group modules by layer (docs/architecture.md,
    /// "The tree"), longest first; every module folder sits in exactly one of them.
    static let layerFolders = [
        "Platform/C", "Platform", "Core", "RivetLibraries", "RastrilloLibraries", "CommandLine", "Tools", "Fuzz",
    ]

    /// `path` (relative to Sources/) without its layer folder: `Module/File.swift`, or nil when
    /// it is in no layer folder.
    static func modulePath(_ path: String) -> String? {
        for folder in layerFolders where path.hasPrefix(folder + "/") {
            let rest = String(path.dropFirst(folder.count + 1))
            if rest.contains("/") { return rest }
        }
        return nil
    }

    /// Every .swift file under the package's Sources/, by its path from its module's folder
    /// (`SystemKit/Calls.swift`, whatever layer folder holds it). A file outside every layer
    /// folder is an error: the tree must show the layers.
    static func sources() throws -> [(path: String, text: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(atPath: root.path) else {
            throw ArchitectureError(description: "cannot list \(root.path)")
        }
        var files: [(path: String, text: String)] = []
        while let relative = walker.nextObject() as? String {
            guard relative.hasSuffix(".swift") else { continue }
            guard let path = modulePath(relative) else {
                throw ArchitectureError(description: "Sources/\(relative) is in no layer folder (\(layerFolders))")
            }
            files.append((path, try String(contentsOfFile: root.appendingPathComponent(relative).path, encoding: .utf8)))
        }
        return files
    }
}

@Suite struct SystemLayerTests {
    @Test func onlyTheSystemLayerRetriesEINTRMakesPipesHexOrThreadsAndOnlyWrappersImportC() throws {
        let files = try SystemLayer.sources()
        #expect(files.count > 100)
        let violations = SystemLayer.violations(in: files)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// Planted: a module folder straight under Sources/ (the flat tree of before) is in no layer.
    @Test func aFileOutsideTheLayerFoldersHasNoModulePath() {
        #expect(SystemLayer.modulePath("Platform/SystemKit/Calls.swift") == "SystemKit/Calls.swift")
        #expect(SystemLayer.modulePath("Platform/C/CCurl/shim.swift") == "CCurl/shim.swift")
        #expect(SystemLayer.modulePath("RastrilloLibraries/Rastrillo/Rastrillo.swift") == "Rastrillo/Rastrillo.swift")
        #expect(SystemLayer.modulePath("Tools/rivetd/main.swift") == "rivetd/main.swift")
        #expect(SystemLayer.modulePath("SystemKit/Calls.swift") == nil)
        #expect(SystemLayer.modulePath("Core/Stray.swift") == nil)
    }

    @Test func eachKindOfCopyIsFoundOutsideItsOwner() {
        let files: [(path: String, text: String)] = [
            ("A/Loop.swift", "if errno == EINTR { continue }"),
            ("A/Pipe.swift", "guard pipe(&fds) == 0 else { return }"),
            ("A/Hex.swift", #"let digits = Array("0123456789abcdef".utf8)"#),
            ("A/Base64.swift", #"let digits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)"#),
            ("A/Decode.swift", "let value = try JSONDecoder().decode(T.self, from: data)"),
            ("A/Parse.swift", "let object = try JSONSerialization.jsonObject(with: data)"),
            ("A/Encode.swift", "let encoder = JSONEncoder()"),
            ("A/Prose.swift", "/// byte for byte what JSONEncoder writes\nlet writer = JSONWriter()"),
            ("ByteText/Base64.swift", #"Array(("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" + two).utf8)"#),
            ("A/Raw.swift", "let code = pthread_create(&thread, nil, body, nil)"),
            ("A/Thread.swift", "Thread { work() }.start()"),
            ("A/Draw.swift", "internal import CQRencode"),
            ("QRCodeKit/QRCode.swift", "internal import CQRencode"),
            ("A/Fine.swift", "// EINTR in a comment\nstartThread(\"x\") { }\nlet p = PipeEnds()\nwake.pipe(x)"),
            ("SystemKit/Retry.swift", "if result == -1 && errno == EINTR { continue }"),
            ("ThreadSupport/Start.swift", "pthread_create(&thread, &attributes, body, work)"),
        ]
        #expect(
            SystemLayer.violations(in: files) == [
                "A/Base64.swift:1: a Base64 alphabet (use ByteText's Base64)",
                "A/Decode.swift:1: Foundation JSON (use ByteText's JSONParser and JSONWriter)",
                "A/Draw.swift:1: an import of CQRencode (only QRCodeKit wraps it)",
                "A/Encode.swift:1: Foundation JSON (use ByteText's JSONParser and JSONWriter)",
                "A/Hex.swift:1: a hex digit table (use ByteText's Hex)",
                "A/Loop.swift:1: an EINTR check (use SystemKit's retryingInterrupts)",
                "A/Parse.swift:1: Foundation JSON (use ByteText's JSONParser and JSONWriter)",
                "A/Pipe.swift:1: a pipe made by hand (use SystemKit's PipeEnds)",
                "A/Raw.swift:1: a thread started by hand (use ThreadSupport)",
                "A/Thread.swift:1: a Foundation Thread (use ThreadSupport)",
            ])
    }
}
