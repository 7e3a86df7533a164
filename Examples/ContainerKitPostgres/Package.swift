// swift-tools-version:6.2
import PackageDescription

// PostgreSQL adapters for ContainerKit: a record store (group commit, rotated tables), session persistence with
// version fencing, and delivery leases. A separate package so the root package keeps no dependencies; a service
// that embeds ContainerKit depends on it by path (see Docs/Scaling.md).
let package = Package(
    name: "ContainerKitPostgres",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ContainerKitPostgres", targets: ["ContainerKitPostgres"]),
        // Starts a throw-away PostgreSQL cluster on 127.0.0.1 for tests (initdb into a temporary directory).
        .library(name: "PostgresTestHarness", targets: ["PostgresTestHarness"]),
    ],
    dependencies: [
        .package(name: "ContainerKit", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "ContainerKitPostgres",
            dependencies: [
                .product(name: "ContainerKit", package: "ContainerKit"),
                .product(name: "ContainerKitDelivery", package: "ContainerKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "PostgresTestHarness"),
        .testTarget(
            name: "ContainerKitPostgresTests",
            dependencies: [
                "ContainerKitPostgres", "PostgresTestHarness",
                .product(name: "ContainerKitTesting", package: "ContainerKit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
