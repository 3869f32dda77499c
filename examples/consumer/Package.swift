// swift-tools-version:6.2
// A package that uses Rivet & Rastrillo the way any other package would: it depends on the
// repository by path, runs RivetGeneratorPlugin on its own rivet.rktd, serves and calls the
// generated typed API over RivetDevice, and tests its HTTP code with ScriptedTransport. Its
// thermostat-backend serves the thermostat under a rivetd, and thermostat-companion pairs with
// that rivetd and calls it through the RivetCompanion product (examples/consumer/check runs both).
import PackageDescription

let package = Package(
    name: "Consumer",
    dependencies: [.package(name: "RivetRastrillo", path: "../..")],
    targets: [
        .target(
            name: "Thermostat",
            dependencies: [
                .product(name: "RivetDevice", package: "RivetRastrillo"),
                .product(name: "Rastrillo", package: "RivetRastrillo"),
            ],
            exclude: ["rivet.lock"],
            plugins: [.plugin(name: "RivetGeneratorPlugin", package: "RivetRastrillo")]),
        .executableTarget(
            name: "thermostat-backend",
            dependencies: ["Thermostat", .product(name: "RivetDevice", package: "RivetRastrillo")]),
        .executableTarget(
            name: "thermostat-companion",
            dependencies: [
                "Thermostat",
                .product(name: "RivetCompanion", package: "RivetRastrillo"),
                .product(name: "RivetDevice", package: "RivetRastrillo"),
            ]),
        .testTarget(
            name: "ThermostatTests",
            dependencies: [
                "Thermostat",
                .product(name: "RivetDevice", package: "RivetRastrillo"),
                .product(name: "Rastrillo", package: "RivetRastrillo"),
                .product(name: "RastrilloTestSupport", package: "RivetRastrillo"),
            ]),
    ]
)
