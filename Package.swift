// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "ContainerKit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ContainerKit", targets: ["ContainerKit"]),
        .library(name: "ContainerKitBraze", targets: ["ContainerKitBraze"]),
        .library(name: "ContainerKitLint", targets: ["ContainerKitLint"]),
        // For the tests of code that embeds ContainerKit: a manual clock, an in-memory logger and sink, a
        // loopback HTTP server and awaitable progress.
        .library(name: "ContainerKitTesting", targets: ["ContainerKitTesting"]),
        .executable(name: "containerkit", targets: ["containerkit"]),
    ],
    targets: [
        .target(name: "ContainerKit"),
        .target(name: "ContainerKitBraze", dependencies: ["ContainerKit"]),
        .target(name: "ContainerKitLint", dependencies: ["ContainerKit", "ContainerKitBraze"]),
        .target(name: "ContainerKitCLI", dependencies: ["ContainerKit", "ContainerKitBraze", "ContainerKitLint"]),
        .executableTarget(name: "containerkit", dependencies: ["ContainerKitCLI"]),
        .executableTarget(
            name: "containerkit-bench",
            dependencies: [
                "ContainerKit", "ContainerKitBraze", "ContainerKitLint", "ContainerKitCLI", "UsersTrackStandIn",
            ]
        ),
        // The loopback /users/track stand-in that `make bench` and `make soak` deliver to.
        .target(name: "UsersTrackStandIn", dependencies: ["ContainerKit"]),
        // `make soak`: kill -9 cycles of `containerkit run --queue` against a /users/track stand-in on 127.0.0.1.
        .executableTarget(name: "containerkit-soak", dependencies: ["ContainerKit", "UsersTrackStandIn"]),
        .target(name: "ContainerKitTesting", dependencies: ["ContainerKit", "ContainerKitBraze"]),
        // This package's own fixtures and stand-ins (Braze's /users/track, hostile answers), on ContainerKitTesting.
        .target(
            name: "TestSupport",
            dependencies: ["ContainerKit", "ContainerKitTesting"],
            path: "Tests/TestSupport"
        ),
        .testTarget(name: "ContainerKitTests", dependencies: ["ContainerKit", "ContainerKitTesting", "TestSupport"]),
        .testTarget(
            name: "ContainerKitBrazeTests",
            dependencies: ["ContainerKitBraze", "ContainerKitTesting", "TestSupport"]
        ),
        .testTarget(
            name: "ContainerKitLintTests",
            dependencies: ["ContainerKitLint", "ContainerKitBraze", "ContainerKitTesting", "TestSupport"]
        ),
        .testTarget(
            name: "ContainerKitCLITests",
            dependencies: [
                "ContainerKitCLI", "ContainerKitBraze", "ContainerKitLint", "ContainerKitTesting", "TestSupport",
            ],
            exclude: ["Golden"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
