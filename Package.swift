// swift-tools-version:6.2
// Rivet & Rastrillo for Linux: a toolkit of small command-line programs over shared libraries.
// Licensed under the Mozilla Public License 2.0 (MPL-2.0), as the Rastrillo seed: see LICENSE.
import PackageDescription

/// How the three HTTP tools link, for start-up time (bench/fetch) and resident
/// memory (bench/download): the shim directory links libstdc++ statically when the Swift runtime
/// is static (see Sources/Tools/rastrillo-fetch/StaticLibStdCxx/libstdc++.so), so libstdc++.so is
/// neither loaded nor relocated nor resident; lld (shipped with the toolchain) packs the image's
/// relative relocations (DT_RELR, glibc 2.36 and later), so the loader reads a few kilobytes of
/// them instead of hundreds. The executables stay position-independent, and lld keeps read-only
/// data out of the executable segment, where the kernel's fault-around would map it with the code.
/// lld also places the functions the tools run first, in the order bench/link-order recorded
/// (LinkOrder/symbols.order), so the kernel maps fewer and fuller 64 KiB windows of code.
var leanToolLinking: [LinkerSetting] {
    let directory = "\(Context.packageDirectory)/Sources/Tools/rastrillo-fetch"
    return [
        .unsafeFlags([
            "-L\(directory)/StaticLibStdCxx",
            "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
            "-Xlinker", "--symbol-ordering-file=\(directory)/LinkOrder/symbols.order",
            "-Xlinker", "--no-warn-symbol-ordering",
        ])
    ]
}

let package = Package(
    name: "RivetRastrillo",
    // What other packages may depend on; the tools' executables are products of their own.
    products: [
        // The device library: the pure core (router, client, transport over any byte stream) and
        // the descriptor-backed stream (RivetDeviceIO) a backend or a test runs it over.
        .library(name: "RivetDevice", targets: ["RivetDevice", "RivetDeviceIO"]),
        .library(name: "Rastrillo", targets: ["Rastrillo"]),
        // What a companion app links to pair with a rivetd (RivetPairing's values and credential,
        // RivetSession's connector over RivetTransport's TLS client) and call it through
        // RivetDevice's typed client (RivetCompanion's session).
        .library(name: "RivetCompanion", targets: ["RivetCompanion", "RivetPairing", "RivetIdentity", "RivetSession", "RivetState", "RivetTransport"]),
        .library(name: "RastrilloTestSupport", targets: ["RastrilloTestSupport"]),
        .plugin(name: "RivetGeneratorPlugin", targets: ["RivetGeneratorPlugin"]),
    ],
    targets: [
        // MARK: C libraries (one system-library target each; shims only for what Swift cannot import)
        .systemLibrary(
            name: "COpenSSL", path: "Sources/Platform/C/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/Platform/C/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CAvahi", path: "Sources/Platform/C/CAvahi", pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Sources/Platform/C/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CQRencode", path: "Sources/Platform/C/CQRencode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]),

        // MARK: Pure byte and text helpers (the standard library alone): hex, Base64, JSON,
        // byte-wise text search, the display rule for outside text, HOST:PORT
        .target(name: "ByteText", path: "Sources/Core/ByteText"),

        // MARK: The one error shape (the standard library alone): a code that equality and hashing
        // use, a message, a retry class where it matters
        .target(name: "CodedError", path: "Sources/Core/CodedError"),

        // MARK: Pure collections (the standard library alone): the FIFO queue with cheap removal
        // from the front
        .target(name: "Queueing", path: "Sources/Core/Queueing"),

        // MARK: The system layer: descriptors, EINTR, pipes, private files (Glibc only, no
        // Foundation), and the only way to start a thread (ThreadSupport: threads, a monitor)
        .target(name: "Timekeeping", path: "Sources/Core/Timekeeping"),
        .target(name: "SystemKit", dependencies: ["ByteText", "Timekeeping"], path: "Sources/Platform/SystemKit"),
        .target(name: "ThreadSupport", dependencies: ["SystemKit", "Timekeeping"], path: "Sources/Platform/ThreadSupport"),

        // MARK: Swift wrappers: the only code that imports each C module
        .target(name: "OpenSSLKit", dependencies: ["CodedError", "COpenSSL", "ByteText", "SystemKit", "Timekeeping"], path: "Sources/Platform/OpenSSLKit"),
        .target(name: "SQLiteKit", dependencies: ["CodedError", "CSQLite", "ByteText", "SystemKit"], path: "Sources/Platform/SQLiteKit"),
        .target(name: "AvahiKit", dependencies: ["CodedError", "CAvahi", "ByteText", "SystemKit"], path: "Sources/Platform/AvahiKit"),
        .target(name: "CurlKit", dependencies: ["CodedError", "CCurl", "ByteText", "SystemKit", "ThreadSupport", "Timekeeping"],
            path: "Sources/Platform/CurlKit"),
        .target(name: "QRCodeKit", dependencies: ["CodedError", "CQRencode"], path: "Sources/Platform/QRCodeKit"),

        // MARK: Command-line kit shared by every tool
        // CommandLineKit uses no Foundation (a tool that links it starts without loading it:
        // bench/fetch); CommandLineFiles holds the Foundation-based file-system parts.
        .target(name: "CommandLineKit", dependencies: ["CodedError", "ByteText", "SystemKit", "ThreadSupport", "Timekeeping"],
            path: "Sources/CommandLine/CommandLineKit"),
        .target(name: "CommandLineFiles", dependencies: ["CodedError", "CommandLineKit", "SystemKit", "ThreadSupport"], path: "Sources/CommandLine/CommandLineFiles"),

        // MARK: Identity (pure): device IDs and scope names, what the gateway needs of pairing
        .target(name: "RivetIdentity", dependencies: ["CodedError", "ByteText"], path: "Sources/Core/RivetIdentity"),
        // MARK: Pairing: values, transcript, coordinator, device client, companion credential (no SQLite)
        .target(name: "RivetPairing", dependencies: ["CodedError", "ByteText", "OpenSSLKit", "RivetIdentity", "Timekeeping"], path: "Sources/Core/RivetPairing"),
        // MARK: Pairing state on this host: the state paths (from the environment), the companion's
        // credential file, the system's randomness
        .target(
            name: "RivetState", dependencies: ["CodedError", "RivetIdentity", "RivetPairing", "OpenSSLKit", "SystemKit"],
            path: "Sources/RivetLibraries/RivetState"),
        // MARK: The pairing registry: the SQLite store of paired devices, the authenticator over it
        .target(name: "RivetRegistry", dependencies: ["CodedError", "RivetPairing", "RivetState", "SQLiteKit", "OpenSSLKit", "SystemKit", "Timekeeping"],
            path: "Sources/RivetLibraries/RivetRegistry"),

        // MARK: Discovery: privacy-bounded advertisement, canonical TXT record, browsing
        .target(name: "RivetDiscovery", dependencies: ["CodedError", "AvahiKit", "ByteText", "OpenSSLKit", "RivetPairing", "SystemKit", "ThreadSupport", "Timekeeping"],
            path: "Sources/RivetLibraries/RivetDiscovery"),
        .executableTarget(
            name: "fuzz-txt", dependencies: ["RivetDiscovery", "AvahiKit", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-txt"),

        .executableTarget(
            name: "rivet-browse", dependencies: ["CommandLineKit", "ToolSpecs", "RivetDiscovery", "OpenSSLKit"],
                path: "Sources/Tools/rivet-browse"),

        // MARK: Rastrillo HTTP: the origin-bound libcurl client, downloads, the rtnetlink observer, its tools
        // RastrilloHTTP uses nothing of Foundation but `Date`, whose few inlined pieces link
        // none of the rest, so the tools start without Foundation (bench/fetch); Rastrillo
        // re-exports it with the Foundation-facing conformances.
        .target(name: "RastrilloHTTP", dependencies: ["CodedError", "ByteText", "CurlKit", "OpenSSLKit", "RastrilloCore", "SystemKit", "ThreadSupport", "Timekeeping"],
            path: "Sources/RastrilloLibraries/RastrilloHTTP"),
        .target(name: "Rastrillo", dependencies: ["RastrilloHTTP", "RastrilloCore"],
            path: "Sources/RastrilloLibraries/Rastrillo"),
        .target(name: "RastrilloTestSupport", dependencies: ["RastrilloHTTP", "RastrilloCore", "SystemKit", "Timekeeping"],
            path: "Sources/RastrilloLibraries/RastrilloTestSupport"),
        .target(name: "RastrilloCLI", dependencies: ["RastrilloHTTP", "RastrilloCore", "CommandLineKit", "ToolSpecs", "ByteText", "SystemKit"],
            path: "Sources/RastrilloLibraries/RastrilloCLI"),
        .executableTarget(
            name: "rastrillo-fetch", dependencies: ["ByteText", "RastrilloHTTP", "RastrilloCLI", "CommandLineKit", "ToolSpecs", "OpenSSLKit"],
                path: "Sources/Tools/rastrillo-fetch",
            exclude: ["StaticLibStdCxx", "LinkOrder"], linkerSettings: leanToolLinking),
        .executableTarget(
            name: "rastrillo-stream",
            dependencies: [
                "RastrilloHTTP", "RastrilloCore", "RastrilloCLI", "CommandLineKit", "ByteText", "ToolSpecs", "SystemKit",
                "Timekeeping", "OpenSSLKit",
            ],
                path: "Sources/Tools/rastrillo-stream",
            linkerSettings: leanToolLinking),
        .executableTarget(
            name: "rastrillo-download", dependencies: ["RastrilloHTTP", "RastrilloCLI", "CommandLineKit", "ToolSpecs", "OpenSSLKit"],
                path: "Sources/Tools/rastrillo-download",
            linkerSettings: leanToolLinking),

        // MARK: Tools: one declarative spec each, and thin executables over the libraries
        .target(name: "ToolSpecs", dependencies: ["ByteText", "CommandLineKit"], path: "Sources/CommandLine/ToolSpecs"),
        .executableTarget(
            name: "fuzz-conf", dependencies: ["CommandLineKit", "ToolSpecs", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-conf"),
        .executableTarget(
            name: "rivet-pair",
            dependencies: ["ByteText", "CommandLineKit", "CommandLineFiles", "ToolSpecs", "RivetPairing", "RivetPairDesktop", "RivetPairCompanion", "OpenSSLKit"],
            path: "Sources/Tools/rivet-pair"),

        // MARK: Rivet device channel: RVT1 framing, typed requests, schema and generator
        .target(name: "RivetWire", dependencies: ["CodedError", "ByteText"], path: "Sources/Core/RivetWire"),
        .target(name: "RivetDevice", dependencies: ["CodedError", "ByteText", "Queueing", "RivetWire"], path: "Sources/Core/RivetDevice"),
        .target(
            name: "RivetDeviceIO", dependencies: ["RivetDevice", "SystemKit", "ThreadSupport"],
            path: "Sources/RivetLibraries/RivetDeviceIO"),
        .target(name: "RivetSchema", path: "Sources/Core/RivetSchema"),
        .target(name: "RivetGateway", dependencies: ["CodedError", "Queueing", "RivetWire", "RivetSchema", "RivetIdentity"],
            path: "Sources/Core/RivetGateway"),
        .executableTarget(name: "rivet-generate", dependencies: ["RivetSchema", "CommandLineKit", "ToolSpecs"],
            path: "Sources/Tools/rivet-generate"),
        .target(name: "RivetFuzzSupport", path: "Sources/Fuzz/RivetFuzzSupport"),
        .executableTarget(
            name: "fuzz-rvt1", dependencies: ["RivetWire", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-rvt1"),
        .executableTarget(
            name: "fuzz-sexpr", dependencies: ["RivetSchema", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-sexpr"),
        .plugin(
            name: "RivetGeneratorPlugin", capability: .buildTool(),
            dependencies: ["rivet-generate"]),
        // MARK: Transport: reconnect backoff, RVD1 preface codec and client machines (pure), TLS connector and stream
        .target(name: "Backoff", path: "Sources/Core/Backoff"),
        .target(name: "RivetSession", dependencies: ["CodedError", "Backoff", "ByteText", "RivetPairing", "OpenSSLKit"],
            path: "Sources/Core/RivetSession"),
        // The client side and what both sides share (no registry: a companion links it).
        .target(
            name: "RivetTransport",
            dependencies: ["CodedError", "ByteText", "RivetSession", "Backoff", "RivetPairing", "RivetState", "OpenSSLKit", "SystemKit", "ThreadSupport", "Timekeeping"],
                path: "Sources/RivetLibraries/RivetTransport"),
        // The server side: identity, listener, pairing service, authentication over the registry.
        .target(
            name: "RivetServer",
            dependencies: [
                "CodedError", "RivetTransport", "RivetSession", "RivetPairing", "RivetRegistry", "RivetState", "OpenSSLKit", "SystemKit",
                "ThreadSupport", "Timekeeping",
            ],
                path: "Sources/RivetLibraries/RivetServer"),
        .executableTarget(
            name: "fuzz-rvd1", dependencies: ["RivetSession", "RivetPairing", "RivetFuzzSupport"],
            path: "Sources/Fuzz/fuzz-rvd1"),
        .executableTarget(
            name: "fuzz-link", dependencies: ["RivetPairing", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-link"),
        .executableTarget(
            name: "fuzz-json", dependencies: ["ByteText", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-json"),
        .executableTarget(
            name: "rivet-bench-handshake",
            dependencies: ["RivetTransport", "RivetServer", "RivetSession", "RivetPairing", "RivetRegistry", "RivetState", "OpenSSLKit", "SystemKit"],
            path: "bench/handshake/Sources"),

        // MARK: Rastrillo core (pure): origins, client errors, event-stream parser, coalesced runner, connectivity, reconnect
        .target(name: "RastrilloCore", dependencies: ["CodedError", "Backoff", "ByteText", "Timekeeping"],
            path: "Sources/Core/RastrilloCore"),
        .executableTarget(
            name: "fuzz-sse", dependencies: ["RastrilloCore", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-sse"),
        .executableTarget(
            name: "fuzz-proxy", dependencies: ["RastrilloCore", "RivetFuzzSupport", "ByteText"],
            path: "Sources/Fuzz/fuzz-proxy"),
        .executableTarget(
            name: "fuzz-resume", dependencies: ["RastrilloCore", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-resume"),
        .executableTarget(
            name: "fuzz-partial", dependencies: ["RastrilloCore", "RivetFuzzSupport"], path: "Sources/Fuzz/fuzz-partial"),
        .executableTarget(
            name: "rastrillo-bench-sse", dependencies: ["RastrilloCore"], path: "bench/stream-parser/Sources"),

        // MARK: The control socket's protocol and client (what rivet-pair links), and the companion side
        .target(name: "RivetControl", dependencies: ["CodedError", "RivetPairing", "SystemKit", "Timekeeping", "ByteText"], path: "Sources/RivetLibraries/RivetControl"),
        .target(
            name: "RivetCompanion",
            dependencies: ["RivetDevice", "RivetPairing", "RivetSession", "RivetTransport", "RivetWire", "ThreadSupport"],
                path: "Sources/RivetLibraries/RivetCompanion"),
        // rivet-pair's two jobs: the desktop's (registry, control socket, QR) and the companion's
        // (TLS client dial, pairing, credential store); the executable only chooses between them.
        .target(
            name: "RivetPairDesktop",
            dependencies: [
                "CommandLineKit", "CommandLineFiles", "RivetControl", "RivetPairing", "RivetRegistry", "RivetSchema", "RivetGateway",
                "QRCodeKit", "ThreadSupport", "ByteText", "SystemKit", "Timekeeping",
            ], path: "Sources/RivetLibraries/RivetPairDesktop"),
        .target(
            name: "RivetPairCompanion",
            dependencies: ["ByteText", "CommandLineKit", "CommandLineFiles", "RivetPairing", "RivetSession", "RivetState", "RivetTransport", "ThreadSupport"],
            path: "Sources/RivetLibraries/RivetPairCompanion"),

        // MARK: The gateway daemon: its parts as a library (only rivetd links it), a thin executable, and the test backend
        .target(
            name: "RivetDaemon",
            dependencies: [
                "CodedError", "ByteText", "RivetTransport", "RivetServer", "RivetSession", "RivetGateway", "RivetSchema", "RivetWire",
                "RivetDevice", "RivetPairing", "RivetRegistry", "RivetControl", "OpenSSLKit", "Backoff", "RivetDiscovery", "SystemKit",
                "ThreadSupport", "CommandLineKit", "Timekeeping", "Queueing",
            ], path: "Sources/RivetLibraries/RivetDaemon"),
        .executableTarget(
            name: "rivetd",
            dependencies: [
                "ByteText", "CommandLineKit", "CommandLineFiles", "ToolSpecs", "RivetDaemon", "RivetControl", "RivetServer", "RivetPairing",
                "RivetState", "SystemKit", "ThreadSupport", "OpenSSLKit",
            ], path: "Sources/Tools/rivetd"),
        .executableTarget(name: "rivet-test-backend", dependencies: ["RivetWire"], path: "Tests/Support/rivet-test-backend"),
        .executableTarget(
            name: "rivet-bench-rpc",
            dependencies: [
                "RivetTransport", "RivetServer", "RivetSession", "RivetPairing", "RivetRegistry", "RivetState", "RivetWire", "OpenSSLKit",
                "SystemKit",
            ],
            path: "bench/rpc/Sources"),

        // MARK: Examples: the scoreboard backend and companion built from examples/schema/rivet.rktd
        .executableTarget(
            name: "scoreboard-backend", dependencies: ["RivetDevice", "RivetDeviceIO"], path: "examples/scoreboard-backend",
            plugins: ["RivetGeneratorPlugin"]),
        .executableTarget(
            // RastrilloHTTP and RastrilloCore are listed beside Rastrillo, which re-exports them,
            // so a change to them rebuilds this target incrementally too.
            name: "scoreboard-companion",
            dependencies: ["RivetDevice", "RivetCompanion", "RivetPairing", "RivetState", "Rastrillo", "RastrilloHTTP", "RastrilloCore"],
            path: "examples/scoreboard-companion", plugins: ["RivetGeneratorPlugin"]),

        // MARK: Tests
        .target(name: "ToolTestSupport", path: "Tests/Support/ToolTestSupport"),
        // `eventually` and `ManualClock` (the `RivetClock` a test moves by hand), shared by the test targets.
        .target(name: "TestSupport", dependencies: ["Timekeeping", "ToolTestSupport"], path: "Tests/Support/TestSupport"),
        // A registry as the release before history wrote it (schema version 1), for migration tests.
        .target(name: "RegistryTestSupport", dependencies: ["RivetPairing", "SQLiteKit", "Timekeeping"], path: "Tests/Support/RegistryTestSupport"),
        .testTarget(name: "ToolSurfaceTests", dependencies: ["ToolSpecs", "CommandLineKit", "CommandLineFiles"]),
        // Reads `swift package describe` and fails on an edge docs/architecture.md forbids.
        .testTarget(name: "ArchitectureTests", dependencies: ["ToolTestSupport"]),
        .testTarget(name: "ToolTestSupportTests", dependencies: ["ToolTestSupport"]),
        .testTarget(
            name: "RivetBrowseToolTests",
            dependencies: [
                "rivet-browse", "RivetDiscovery", "RivetPairing", "AvahiKit", "ToolTestSupport", "AvahiTestSupport", "TestSupport", "rivetd",
                "rivet-test-backend",
            ]),
        .testTarget(
            name: "RivetPairToolTests",
            dependencies: [
                "rivet-pair", "RivetPairing", "RivetRegistry", "ToolTestSupport", "OpenSSLKit", "SQLiteKit", "ByteText", "RegistryTestSupport",
            ]),
        .testTarget(
            name: "RivetdTests",
            dependencies: [
                "TestSupport", "rivetd", "rivet-pair", "rivet-test-backend", "RivetControl", "RivetCompanion", "RivetDevice", "RivetWire", "RivetTransport",
                "RivetSession", "RivetPairing", "RivetRegistry", "RivetState", "OpenSSLKit", "ToolTestSupport", "rivet-browse", "RivetDiscovery",
                "RivetDaemon", "scoreboard-companion",
            ]),
        .testTarget(name: "OpenSSLKitTests", dependencies: ["OpenSSLKit", "ToolTestSupport"]),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit"]),
        .testTarget(name: "SystemKitTests", dependencies: ["SystemKit", "ThreadSupport", "TestSupport", "Timekeeping", "ToolTestSupport"]),
        .testTarget(name: "ByteTextTests", dependencies: ["ByteText", "ToolTestSupport", "fuzz-json"]),
        .testTarget(name: "CodedErrorTests", dependencies: ["CodedError"]),
        .testTarget(name: "QueueingTests", dependencies: ["Queueing"]),
        .testTarget(name: "QRCodeKitTests", dependencies: ["QRCodeKit", "ToolTestSupport"]),
        .target(name: "LoopbackHTTPServer", dependencies: ["OpenSSLKit", "ToolTestSupport"], path: "Tests/Support/LoopbackHTTPServer"),
        .target(name: "AvahiTestSupport", dependencies: ["AvahiKit", "ToolTestSupport"], path: "Tests/Support/AvahiTestSupport"),
        .testTarget(name: "AvahiKitTests", dependencies: ["AvahiKit", "AvahiTestSupport"]),
        .testTarget(
            name: "RivetDiscoveryTests",
            dependencies: [
                "TestSupport", "RivetDiscovery", "RivetPairing", "ByteText", "AvahiKit", "AvahiTestSupport", "ToolTestSupport", "fuzz-txt",
                "Timekeeping",
            ],
            resources: [.copy("Fixtures")]),
        .testTarget(name: "CurlKitTests", dependencies: ["TestSupport", "CurlKit", "LoopbackHTTPServer", "ToolTestSupport"]),
        .testTarget(
            name: "RastrilloToolTests",
            dependencies: [
                "TestSupport", "rastrillo-fetch", "rastrillo-download", "rastrillo-stream", "RastrilloHTTP", "RastrilloCore", "RastrilloCLI", "CommandLineKit", "ToolTestSupport",
                "LoopbackHTTPServer", "OpenSSLKit", "ToolSpecs",
            ]),
        .testTarget(
            name: "RastrilloTests",
            dependencies: [
                "TestSupport", "Rastrillo", "RastrilloHTTP", "RastrilloCore", "RastrilloTestSupport", "LoopbackHTTPServer",
                "CurlKit", "fuzz-proxy", "ToolTestSupport", "SystemKit", "Timekeeping",
            ]),
        .testTarget(
            name: "CommandLineKitTests",
            dependencies: ["TestSupport", "ByteText", "CommandLineKit", "CommandLineFiles", "ToolSpecs", "ToolTestSupport", "fuzz-conf"],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "RivetPairingTests",
            dependencies: [
                "TestSupport", "RivetPairing", "RivetRegistry", "RivetState", "OpenSSLKit", "SQLiteKit", "ByteText", "SystemKit", "ToolTestSupport",
                "fuzz-link", "Timekeeping", "RegistryTestSupport",
            ],
            resources: [.copy("Fixtures")]),
        .testTarget(name: "RivetWireTests", dependencies: ["RivetWire", "ToolTestSupport"]),
        .testTarget(name: "RivetDeviceTests", dependencies: ["TestSupport", "RivetDevice", "RivetDeviceIO"]),
        .testTarget(name: "RivetGatewayTests", dependencies: ["RivetGateway", "RivetWire", "RivetSchema", "RivetPairing", "RivetDevice"]),
        .testTarget(
            name: "RivetSchemaTests", dependencies: ["RivetSchema", "ToolTestSupport"], exclude: ["Reference"]),
        // RouteNetlinkNamespaceTests observes rtnetlink through RastrilloHTTP's `NativeConnectivity.shared`.
        .testTarget(
            name: "RastrilloCoreTests",
            dependencies: ["TestSupport", "RastrilloCore", "RastrilloHTTP", "Backoff", "fuzz-sse", "fuzz-resume", "fuzz-partial", "ToolTestSupport"]),
        .testTarget(
            name: "ExamplesTests",
            dependencies: [
                "TestSupport", "scoreboard-backend", "scoreboard-companion", "rivetd", "rastrillo-fetch", "rastrillo-stream",
                "rastrillo-download", "rivet-browse", "RivetDevice", "RivetDeviceIO", "RivetWire",
                "RivetPairing", "RivetRegistry", "RivetState", "OpenSSLKit", "ToolTestSupport", "LoopbackHTTPServer",
            ],
            plugins: ["RivetGeneratorPlugin"]),
        .testTarget(name: "InstallTests", dependencies: ["ToolTestSupport"]),
        .testTarget(
            name: "GeneratedConsumerTests", dependencies: ["RivetDevice", "RivetDeviceIO"],
            plugins: ["RivetGeneratorPlugin"]),
        .testTarget(
            name: "RivetSessionTests", dependencies: ["RivetSession", "Backoff", "RivetPairing", "OpenSSLKit", "ToolTestSupport"],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "RivetTransportTests",
            dependencies: [
                "TestSupport", "RivetTransport", "RivetServer", "RivetSession", "Backoff", "RivetPairing", "RivetRegistry", "RivetState",
                "OpenSSLKit", "ToolTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
