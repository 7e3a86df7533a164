// swift-tools-version:6.2
import PackageDescription

// Products by audience: a service links `ContainerKit` (the runtime) and, to send Braze calls,
// `ContainerKitBraze` (which brings `ContainerKitDelivery`, the vendor-neutral delivery pipeline). Tools link
// `ContainerKitDiff` and `ContainerKitLint` (+ `ContainerKitBrazeLint` for the Braze rules).
let package = Package(
    name: "ContainerKit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ContainerKit", targets: ["ContainerKit"]),
        .library(name: "ContainerKitDelivery", targets: ["ContainerKitDelivery"]),
        .library(name: "ContainerKitBraze", targets: ["ContainerKitBraze"]),
        .library(name: "ContainerKitDiff", targets: ["ContainerKitDiff"]),
        .library(name: "ContainerKitLint", targets: ["ContainerKitLint"]),
        .library(name: "ContainerKitBrazeLint", targets: ["ContainerKitBrazeLint"]),
        .library(name: "UsersTrackStandIn", targets: ["UsersTrackStandIn"]),
        // For the tests of code that embeds ContainerKit: a manual clock, an in-memory logger and sink, a
        // loopback HTTP server and awaitable progress.
        .library(name: "ContainerKitTesting", targets: ["ContainerKitTesting"]),
        .executable(name: "containerkit", targets: ["containerkit"]),
        .executable(name: "users-track-stand-in", targets: ["users-track-stand-in"]),
    ],
    targets: [
        // The runtime: loading, formats, evaluation, data layer, sessions, lifecycle, preview, HTTP.
        .target(name: "ContainerKit"),
        // The vendor-neutral delivery pipeline: records, sinks, queues, record stores, destinations.
        .target(name: "ContainerKitDelivery", dependencies: ["ContainerKit"]),
        // The Braze tag provider, Braze's rules and the `/users/track` destination.
        .target(name: "ContainerKitBraze", dependencies: ["ContainerKit", "ContainerKitDelivery"]),
        // The structural diff of two containers and the replay of events through both.
        .target(name: "ContainerKitDiff", dependencies: ["ContainerKit"]),
        // The linter: vendor-free rules, reporters, configuration, and the regex risk analyser.
        .target(name: "ContainerKitLint", dependencies: ["ContainerKit"]),
        // The Braze lint rules, registered with the linter by whoever runs it.
        .target(
            name: "ContainerKitBrazeLint",
            dependencies: ["ContainerKit", "ContainerKitLint", "ContainerKitBraze"]
        ),
        .target(
            name: "ContainerKitCLI",
            dependencies: [
                "ContainerKit", "ContainerKitDelivery", "ContainerKitBraze", "ContainerKitDiff", "ContainerKitLint",
                "ContainerKitBrazeLint",
            ]
        ),
        .executableTarget(name: "containerkit", dependencies: ["ContainerKitCLI"]),
        .executableTarget(
            name: "containerkit-bench",
            dependencies: [
                "ContainerKit", "ContainerKitDelivery", "ContainerKitBraze", "ContainerKitDiff", "ContainerKitLint",
                "ContainerKitBrazeLint", "ContainerKitCLI", "UsersTrackStandIn",
            ]
        ),
        // The loopback /users/track stand-in that `make bench`, `make soak` and the example service's load
        // tests deliver to.
        .target(name: "UsersTrackStandIn", dependencies: ["ContainerKit", "ContainerKitTesting"]),
        .executableTarget(name: "users-track-stand-in", dependencies: ["UsersTrackStandIn"]),
        // `make soak`: kill -9 cycles of `containerkit run --queue` against a /users/track stand-in on 127.0.0.1.
        .executableTarget(name: "containerkit-soak", dependencies: ["ContainerKit", "UsersTrackStandIn"]),
        .target(name: "ContainerKitTesting", dependencies: ["ContainerKit", "ContainerKitDelivery"]),
        // This package's own fixtures and stand-ins (Braze's /users/track, hostile answers), on ContainerKitTesting.
        .target(
            name: "TestSupport",
            dependencies: ["ContainerKit", "ContainerKitTesting"],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "ContainerKitTests",
            // The embedding guide's snippets use the Braze provider and the delivery library too.
            dependencies: [
                "ContainerKit", "ContainerKitTesting", "TestSupport", "ContainerKitDelivery", "ContainerKitBraze",
            ],
            // The golden traces (GoldenTraceTests reads them from the source tree).
            exclude: ["Trace/Golden"]
        ),
        .testTarget(
            name: "ContainerKitDiffTests",
            dependencies: ["ContainerKitDiff", "ContainerKitTesting", "TestSupport"]
        ),
        .testTarget(
            name: "ContainerKitBrazeTests",
            dependencies: [
                "ContainerKitDelivery", "ContainerKitBraze", "ContainerKitTesting", "TestSupport", "UsersTrackStandIn",
            ]
        ),
        .testTarget(
            name: "ContainerKitLintTests",
            dependencies: [
                "ContainerKitLint", "ContainerKitBrazeLint", "ContainerKitBraze", "ContainerKitTesting", "TestSupport",
            ]
        ),
        .testTarget(
            name: "ContainerKitCLITests",
            dependencies: [
                "ContainerKitCLI", "ContainerKitDelivery", "ContainerKitBraze", "ContainerKitDiff", "ContainerKitLint",
                "ContainerKitBrazeLint", "ContainerKitTesting", "TestSupport",
            ],
            exclude: ["Golden"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
