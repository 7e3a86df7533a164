// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "ContainerKit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ContainerKit", targets: ["ContainerKit"]),
        .library(name: "ContainerKitBraze", targets: ["ContainerKitBraze"]),
        .library(name: "ContainerKitLint", targets: ["ContainerKitLint"]),
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
        .target(name: "TestSupport", dependencies: ["ContainerKit"], path: "Tests/TestSupport"),
        .testTarget(name: "ContainerKitTests", dependencies: ["ContainerKit", "TestSupport"]),
        .testTarget(name: "ContainerKitBrazeTests", dependencies: ["ContainerKitBraze", "TestSupport"]),
        .testTarget(
            name: "ContainerKitLintTests",
            dependencies: ["ContainerKitLint", "ContainerKitBraze", "TestSupport"]
        ),
        .testTarget(
            name: "ContainerKitCLITests",
            dependencies: ["ContainerKitCLI", "ContainerKitBraze", "ContainerKitLint", "TestSupport"],
            exclude: ["Golden"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
