// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "TagService",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "TagService", targets: ["TagService"])
    ],
    dependencies: [
        .package(name: "ContainerKit", path: "../.."),
        .package(name: "ContainerKitPostgres", path: "../ContainerKitPostgres"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // zlib over NIO's ByteBuffer, for bodies sent with Content-Encoding: gzip or deflate (what
        // hummingbird-compression uses).
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "TagServiceCore",
            dependencies: [
                .product(name: "ContainerKit", package: "ContainerKit"),
                .product(name: "ContainerKitBraze", package: "ContainerKit"),
                .product(name: "ContainerKitPostgres", package: "ContainerKitPostgres"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ]
        ),
        .executableTarget(name: "TagService", dependencies: ["TagServiceCore"]),
        // The debug page's cost on the push path, counted under callgrind (bench/bench-service.sh).
        .executableTarget(name: "debug-cost-probe", dependencies: ["TagServiceCore"], path: "Sources/DebugCostProbe"),
        .testTarget(
            name: "TagServiceTests",
            dependencies: [
                "TagServiceCore",
                .product(name: "ContainerKitTesting", package: "ContainerKit"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresTestHarness", package: "ContainerKitPostgres"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
