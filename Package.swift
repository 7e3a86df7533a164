// swift-tools-version:6.2
import PackageDescription

// Products by audience: a service links `ContainerKit` (the runtime) and, to send Braze calls,
// `ContainerKitBraze` (which brings `ContainerKitDelivery`, the delivery pipeline). Tools link
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
        // For the tests of code that embeds ContainerKit: a manual clock, an in-memory logger and sink, a
        // loopback HTTP server, awaitable progress, and a loopback `/users/track` stand-in.
        .library(name: "ContainerKitTesting", targets: ["ContainerKitTesting"]),
        .executable(name: "containerkit", targets: ["containerkit"]),
        .executable(name: "users-track-stand-in", targets: ["users-track-stand-in"]),
    ],
    targets: [
        // The runtime: loading, the compiler and its model, evaluation, data layers, sessions, lifecycle, preview.
        .target(name: "ContainerKit", dependencies: ["ContainerKitSupport", "ContainerKitHTTP"]),
        // Internal (no product): the package's mutex (a lock the thread sanitizer understands in `make tsan` builds)
        // and the thread a `run()` owns; ContainerKit re-exports them to the package's other modules.
        .target(name: "ContainerKitSupport"),
        // Internal (no product): the bounded HTTP/1.1 client (pooled keep-alive connections, size limits,
        // deadlines) that container fetches and the `/users/track` destination use.
        .target(name: "ContainerKitHTTP", dependencies: ["ContainerKitSupport"]),
        // The delivery pipeline: records, sinks, queues, record stores, destinations. Its record model is Braze's
        // (the kinds of `/users/track` and its standard attributes); the engine, stores and destinations know no
        // vendor.
        .target(name: "ContainerKitDelivery", dependencies: ["ContainerKit"]),
        // The Braze tag provider, Braze's rules and the `/users/track` destination.
        .target(name: "ContainerKitBraze", dependencies: ["ContainerKit", "ContainerKitDelivery", "ContainerKitHTTP"]),
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
                "ContainerKitBrazeLint", "ContainerKitCLI", "ContainerKitTesting",
            ]
        ),
        // The loopback /users/track stand-in (ContainerKitTesting's) as a process, for `make bench-cluster`.
        .executableTarget(name: "users-track-stand-in", dependencies: ["ContainerKitTesting"]),
        // `make soak`: kill -9 cycles of `containerkit run --queue` against a /users/track stand-in on 127.0.0.1.
        .executableTarget(name: "containerkit-soak", dependencies: ["ContainerKit", "ContainerKitTesting"]),
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
            name: "ContainerKitHTTPTests",
            dependencies: ["ContainerKitHTTP", "ContainerKit", "ContainerKitTesting", "TestSupport"]
        ),
        .testTarget(
            name: "ContainerKitDiffTests",
            dependencies: ["ContainerKitDiff", "ContainerKitTesting", "TestSupport"]
        ),
        .testTarget(
            name: "ContainerKitBrazeTests",
            dependencies: [
                "ContainerKitDelivery", "ContainerKitBraze", "ContainerKitTesting", "TestSupport", "ContainerKitHTTP",
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
                "ContainerKitBrazeLint", "ContainerKitTesting", "TestSupport", "ContainerKitHTTP",
            ],
            exclude: ["Golden"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The upcoming-feature settings swift-log has on, in every target: existential types spelled `any P`; imports internal
// unless written otherwise (`public import` where a module's public API names the imported module's types,
// `package import` where only its package API does); a member (`Mutex.withLock`, an extension's method) visible only
// in a file that imports its module. Each module that names `Mutex` declares its own alias of `ContainerKitMutex`:
// only a module's own declaration shadows the `Synchronization.Mutex` a file imports for `withLock` (in `make tsan`
// builds the two differ).
for target in package.targets where target.type != .plugin {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("InternalImportsByDefault"),
        ]
}
