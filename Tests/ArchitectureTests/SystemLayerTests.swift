import Foundation
import Testing

/// What only the system layer may write: SystemKit owns EINTR, pipes, `poll`, sockets,
/// `accept` and Unix socket addresses; ThreadSupport owns starting a thread, pthread mutexes and
/// worker queues; ByteText (pure) owns hex digits, Base64 alphabets and JSON, which nothing reads
/// or writes with Foundation; Synchronization's `Mutex` is the one lock, so a hand-made lock
/// wrapper belongs nowhere; and what only a C library's wrapper may write: its `import`
/// (`Layering.wrapper`). Comment lines are not code and are skipped.
enum SystemLayer {
    struct Rule {
        let what: String
        let pattern: NSRegularExpression
        /// The module folder where the pattern belongs; nil: nowhere.
        let owner: String?
    }

    static let rules: [Rule] = [
        rule("an EINTR check (use SystemKit's retryingInterrupts)", #"\bEINTR\b"#, owner: "SystemKit"),
        rule("a pipe made by hand (use SystemKit's PipeEnds)", #"(?<![A-Za-z0-9_.])pipe2?\s*\("#, owner: "SystemKit"),
        rule("a hex digit table (use ByteText's Hex)", #"0123456789abcdef"#, owner: "ByteText"),
        rule("a raw poll (use SystemKit's Poll)", rawCall("poll"), owner: "SystemKit"),
        rule("a raw socket (use SystemKit's FileDescriptor.socket: close-on-exec)", rawCall("socket"), owner: "SystemKit"),
        // The C accept's three unlabelled arguments, so a method named accept is not one.
        rule(
            "a raw accept (use SystemKit's FileDescriptor.accept: accept4, close-on-exec)",
            #"(?<![A-Za-z0-9_"])(Glibc\.)?accept4?\s*\([^,():]*,[^,():]*,[^,():]*\)"#, owner: "SystemKit"),
        rule("a sockaddr_un filled by hand (use SystemKit's UnixSocketAddress)", #"\bsockaddr_un\b"#, owner: "SystemKit"),
        rule(
            "a Base64 alphabet (use ByteText's Base64)", #"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"#,
            owner: "ByteText"),
        rule(
            "Foundation JSON (use ByteText's JSONParser and JSONWriter)", #"\b(JSONSerialization|JSONEncoder|JSONDecoder)\b"#,
            owner: "ByteText"),
        rule("a thread started by hand (use ThreadSupport)", #"\bpthread_create\s*\("#, owner: "ThreadSupport"),
        rule("a pthread mutex (use Synchronization's Mutex, or ThreadSupport's Monitor to wait)", #"\bpthread_mutex_"#, owner: "ThreadSupport"),
        rule("a Dispatch queue (use ThreadSupport's SerialQueue)", #"\bDispatchQueue\s*\("#, owner: "ThreadSupport"),
        rule("a lock wrapper (use Synchronization's Mutex)", #"\bLocked\s*[<(]"#, owner: nil),
        rule(
            "a Foundation Thread (use ThreadSupport)", #"(?<![A-Za-z0-9_.])Thread\s*(\(|\{)|Thread\.detachNewThread"#,
            owner: "ThreadSupport"),
        rule("a reading of the time (use the injected RivetClock)", timeReading, owner: "SystemKit"),
    ] + wrapperImports

    /// What reads the time without a `RivetClock`: `ContinuousClock.now` and the implicit
    /// `.now` of its instants, a `ContinuousClock()` or `SuspendingClock` made by hand, sleeping
    /// on `.continuous`, Foundation's `Date()`, `Date.now` and `timeIntervalSinceNow`, and the C
    /// calls. `SystemClock` (SystemKit) is the one place that does.
    static let timeReading = [
        #"ContinuousClock\s*\.\s*now\b"#, #"(?<![A-Za-z0-9_)\]])\.now\b"#, #"ContinuousClock\s*\(\s*\)"#,
        #"\bSuspendingClock\b"#, #"clock:\s*\.continuous\b"#, #"\bDate\s*\(\s*\)"#, #"\bDate\.now\b"#,
        #"timeIntervalSinceNow"#, #"\bclock_gettime\s*\("#, #"\bgettimeofday\s*\("#,
    ].joined(separator: "|")

    /// An `import` of each C module, which only its wrapper may write.
    private static let wrapperImports = Layering.wrapper.sorted(by: { $0.key < $1.key }).map { module, wrapper in
        rule("an import of \(module) (only \(wrapper) wraps it)", #"\bimport\s+\#(module)\b"#, owner: wrapper)
    }

    /// A call of the C function `name`, bare or as `Glibc.name`, not a method of that name
    /// (`FileDescriptor.socket(`) nor text in a message (`"socket(AF_UNIX) failed"`, `"a poll (…)"`).
    private static func rawCall(_ name: String) -> String {
        #"(?<![A-Za-z0-9_."])\#(name)\(|\bGlibc\.\#(name)\("#
    }

    private static func rule(_ what: String, _ pattern: String, owner: String?) -> Rule {
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
                for rule in rules where rule.owner.map({ path.hasPrefix($0 + "/") }) != true {
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
        return try TestTree.swiftFiles(under: root).map { relative, text in
            guard let path = modulePath(relative) else {
                throw ArchitectureError(description: "Sources/\(relative) is in no layer folder (\(layerFolders))")
            }
            return (path, text)
        }
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

    /// Planted: a deadline on `ContinuousClock.now`, an implicit `.now`, a `Date()`, a
    /// `clock_gettime` and a sleep on `.continuous`, each outside SystemKit.
    @Test func aReadingOfTheTimeIsFoundOutsideTheClocksHome() {
        let files: [(path: String, text: String)] = [
            ("A/Deadline.swift", "let deadline = ContinuousClock.now + timeout"),
            ("A/Implicit.swift", "stepDeadline = .now + configuration.prefaceTimeout"),
            ("A/Wall.swift", "self.started = Date()"),
            ("A/Raw.swift", "clock_gettime(CLOCK_REALTIME, &now)"),
            ("A/Sleep.swift", "try await Task.sleep(until: deadline, clock: .continuous)"),
            ("A/Fine.swift", """
                let deadline = clock.now + timeout
                let created = Date(timeIntervalSince1970: clock.wallClockNow.seconds)
                let now = clock.now
                // ContinuousClock.now in a comment
                """),
            ("SystemKit/SystemClock.swift", "public var now: ContinuousClock.Instant { ContinuousClock.now }"),
        ]
        let what = "a reading of the time (use the injected RivetClock)"
        #expect(
            SystemLayer.violations(in: files) == [
                "A/Deadline.swift:1: \(what)", "A/Implicit.swift:1: \(what)", "A/Raw.swift:1: \(what)",
                "A/Sleep.swift:1: \(what)", "A/Wall.swift:1: \(what)",
            ])
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
            ("A/Poll.swift", "let ready = retryingInterrupts { poll(&fds, 2, -1) }"),
            ("A/Socket.swift", "let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)"),
            ("A/Accept.swift", "let client = accept(fd, nil, nil)"),
            ("A/Address.swift", "var address = sockaddr_un()"),
            ("A/Mutex.swift", "pthread_mutex_lock(mutex)"),
            ("A/Queue.swift", "private let queue = DispatchQueue(label: \"x\")"),
            ("A/Locked.swift", "let names = Locked<[String]>([])"),
            ("RivetTransport/Locked.swift", "package final class Locked<Value> { init(_ v: Value) { Locked(v) } }"),
            ("ThreadSupport/Monitor.swift", "pthread_mutex_init(mutex, nil)\nlet q = DispatchQueue(label: \"y\")"),
            ("A/Fine2.swift", "let lines = LockedLines()\nlet m = Mutex<Int>(0)\nlet q = SerialQueue(name: \"z\")"),
            (
                "A/Wrapped.swift",
                "let s = try FileDescriptor.socket(family: AF_INET, type: 1)\ntry Poll.wait(&fds, timeout: 0)\n"
                    + "throw Failure(\"socket(AF_UNIX) failed\")\nreturn accept(envelope, group: &group)\n"
                    + "throw .failure(\"cannot create avahi's threaded poll (out of memory)\")\n"
                    + "let c = try FileDescriptor.accept(fd, peer: &storage)\nlet u = try FileDescriptor.unixSocket()"
            ),
            ("SystemKit/Socket.swift", "let fd = Glibc.socket(family, type, 0)\nvar address = sockaddr_un()"),
            ("SystemKit/Retry.swift", "if result == -1 && errno == EINTR { continue }"),
            ("ThreadSupport/Start.swift", "pthread_create(&thread, &attributes, body, work)"),
        ]
        #expect(
            SystemLayer.violations(in: files) == [
                "A/Accept.swift:1: a raw accept (use SystemKit's FileDescriptor.accept: accept4, close-on-exec)",
                "A/Address.swift:1: a sockaddr_un filled by hand (use SystemKit's UnixSocketAddress)",
                "A/Base64.swift:1: a Base64 alphabet (use ByteText's Base64)",
                "A/Decode.swift:1: Foundation JSON (use ByteText's JSONParser and JSONWriter)",
                "A/Draw.swift:1: an import of CQRencode (only QRCodeKit wraps it)",
                "A/Encode.swift:1: Foundation JSON (use ByteText's JSONParser and JSONWriter)",
                "A/Hex.swift:1: a hex digit table (use ByteText's Hex)",
                "A/Locked.swift:1: a lock wrapper (use Synchronization's Mutex)",
                "A/Loop.swift:1: an EINTR check (use SystemKit's retryingInterrupts)",
                "A/Mutex.swift:1: a pthread mutex (use Synchronization's Mutex, or ThreadSupport's Monitor to wait)",
                "A/Parse.swift:1: Foundation JSON (use ByteText's JSONParser and JSONWriter)",
                "A/Pipe.swift:1: a pipe made by hand (use SystemKit's PipeEnds)",
                "A/Poll.swift:1: a raw poll (use SystemKit's Poll)",
                "A/Queue.swift:1: a Dispatch queue (use ThreadSupport's SerialQueue)",
                "A/Raw.swift:1: a thread started by hand (use ThreadSupport)",
                "A/Socket.swift:1: a raw socket (use SystemKit's FileDescriptor.socket: close-on-exec)",
                "A/Thread.swift:1: a Foundation Thread (use ThreadSupport)",
                "RivetTransport/Locked.swift:1: a lock wrapper (use Synchronization's Mutex)",
            ])
    }
}
