// swift-tools-version:6.2
// Rivet & Rastrillo for Linux: a toolkit of small command-line programs over shared libraries.
import PackageDescription

let package = Package(
    name: "RivetRastrillo",
    targets: [
        // MARK: C libraries (one system-library target each; shims only for what Swift cannot import)
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CAvahi", path: "Sources/CAvahi", pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),

        // MARK: Swift wrappers: the only code that imports each C module
        .target(name: "OpenSSLKit", dependencies: ["COpenSSL"]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite"]),
        .target(name: "AvahiKit", dependencies: ["CAvahi"]),
        .target(name: "CurlKit", dependencies: ["CCurl"]),

        // MARK: Command-line kit shared by every tool
        .target(name: "CommandLineKit"),

        // MARK: Pairing: coordinator, transcript, registry, authenticator, companion credential
        .target(name: "RivetPairing", dependencies: ["OpenSSLKit", "SQLiteKit"]),

        // MARK: Transport: reconnect backoff, RVD1 preface codec and client machines (pure), TLS listener and connector
        .target(name: "Backoff"),
        .target(name: "RivetSession", dependencies: ["Backoff", "RivetPairing", "OpenSSLKit"]),
        .target(name: "RivetTransport", dependencies: ["RivetSession", "Backoff", "RivetPairing", "OpenSSLKit"]),
        .executableTarget(name: "fuzz-rvd1", dependencies: ["RivetSession", "RivetPairing"], path: "Sources/Fuzz/fuzz-rvd1"),
        .executableTarget(
            name: "rivet-bench-handshake", dependencies: ["RivetTransport", "RivetSession", "RivetPairing", "OpenSSLKit"],
            path: "bench/handshake/Sources"),

        // MARK: Tests
        .testTarget(name: "OpenSSLKitTests", dependencies: ["OpenSSLKit"]),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit"]),
        .testTarget(name: "AvahiKitTests", dependencies: ["AvahiKit"]),
        .testTarget(name: "CurlKitTests", dependencies: ["CurlKit"]),
        .testTarget(
            name: "CommandLineKitTests", dependencies: ["CommandLineKit"],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "RivetPairingTests", dependencies: ["RivetPairing", "OpenSSLKit", "SQLiteKit"],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "RivetSessionTests", dependencies: ["RivetSession", "Backoff", "RivetPairing", "OpenSSLKit"],
            resources: [.copy("Fixtures")]),
        .testTarget(
            name: "RivetTransportTests",
            dependencies: ["RivetTransport", "RivetSession", "Backoff", "RivetPairing", "OpenSSLKit"]),
    ],
    swiftLanguageModes: [.v6]
)
