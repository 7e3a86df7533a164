import ContainerKit
import ContainerKitTesting
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// `containerkit-soak`: kills `containerkit run --queue` with SIGKILL again and again while it delivers to a
// `/users/track` stand-in on 127.0.0.1, then lets one last run drain the queue, and checks that every event
// whose output line `run` printed (printed only once its records are durable: acknowledged) reached the
// server. Prints `soak_acknowledged=`, `soak_lost=` (must be 0) and `soak_delivered_twice=` (at-least-once
// delivery may repeat what a killed run sent but had not confirmed); exits 1 when anything was lost.
//
//   containerkit-soak [--cycles 20] [--events 3000 (fresh ones per cycle)] [--seed 1] [--binary .build/debug/containerkit]
//                     [--container Containers/GTM-MUSIC01.json]

struct SoakError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

struct SoakOptions {
    var cycles = 20
    var events = 3000
    var seed: UInt64 = 1
    var binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("containerkit").path
    var container = "Containers/GTM-MUSIC01.json"
    /// The longest a run may take before the soak gives up on it (the final, draining run included).
    var runLimit: TimeInterval = 120

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let name = rest.popFirst() {
            guard let value = rest.popFirst() else { throw SoakError("\(name) needs a value") }
            switch name {
            case "--cycles": cycles = Int(value) ?? cycles
            case "--events": events = Int(value) ?? events
            case "--seed": seed = UInt64(value) ?? seed
            case "--binary": binary = value
            case "--container": container = value
            default: throw SoakError("unknown option \(name)")
            }
        }
    }
}

/// A small deterministic generator for kill delays.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One `containerkit run`: the output lines it printed, how it ended.
struct RunOutcome {
    var printedLines: Int
    var killed: Bool
    var status: Int32
}

func runOnce(
    _ options: SoakOptions,
    events: String,
    queue: String,
    endpoint: String,
    killAfter: TimeInterval?
) throws -> RunOutcome {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: options.binary)
    process.arguments = [
        "run", options.container, "--events", events, "--format", "json", "--braze",
        "com.appboy.googletagmanager.BrazeGtmTagProvider", "--sink", "braze:\(endpoint)", "--queue", queue,
        "--log-level", "error",
    ]
    var environment = ProcessInfo.processInfo.environment
    environment["BRAZE_REST_API_KEY"] = "soak-key"
    process.environment = environment
    let stdout = Pipe()
    process.standardOutput = stdout
    process.standardError = FileHandle.nullDevice
    try process.run()
    let reader = stdout.fileHandleForReading
    // Count newline-terminated lines as they arrive (a line cut by the kill was not printed).
    let counter = LineCounter()
    let readerThread = Thread {
        while true {
            let data = reader.availableData
            if data.isEmpty { break }
            counter.add(data)
        }
        counter.finish()
    }
    readerThread.start()
    let deadline = Date().addingTimeInterval(killAfter ?? options.runLimit)
    while process.isRunning && Date() < deadline { usleep(2_000) }
    var killed = false
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        killed = true
    }
    process.waitUntilExit()
    counter.waitUntilFinished()
    if killAfter == nil && killed { throw SoakError("the final run did not finish within \(options.runLimit) s") }
    return RunOutcome(printedLines: counter.lines, killed: killed, status: process.terminationStatus)
}

final class LineCounter: @unchecked Sendable {
    private let lock = NSCondition()
    private var count = 0
    private var done = false

    var lines: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func add(_ data: Data) {
        lock.lock()
        count += data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        lock.unlock()
    }

    func finish() {
        lock.lock()
        done = true
        lock.broadcast()
        lock.unlock()
    }

    func waitUntilFinished() {
        lock.lock()
        while !done { lock.wait() }
        lock.unlock()
    }
}

func soak(_ options: SoakOptions) async throws -> Bool {
    guard FileManager.default.isExecutableFile(atPath: options.binary) else {
        throw SoakError("no containerkit binary at '\(options.binary)' (build it, or pass --binary)")
    }
    let server = try UsersTrackStandIn()
    // The cycles block this task's thread while they wait for their processes; the stand-in's own threads
    // serve meanwhile.
    return try await server.withRunning { try soak(options, server: server) }
}

func soak(_ options: SoakOptions, server: UsersTrackStandIn) throws -> Bool {
    let endpoint = "http://127.0.0.1:\(server.port)"
    let work = NSTemporaryDirectory() + "containerkit-soak-\(getpid())"
    let queue = work + "/queue"
    try FileManager.default.createDirectory(atPath: queue, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: work) }
    let eventsPath = work + "/events.jsonl"
    let login = #"{"event": "login", "user_id": "soak-user"}"#
    func line(_ index: Int) -> String {
        #"{"event": "played song", "title": "soak-\#(index)", "genre": "jazz", "duration": 300}"#
    }

    var random = SplitMix(state: options.seed)
    // Every cycle gets `events` fresh events (never those of an earlier cycle: a cycle left with few events
    // would finish before its kill). Output lines come in input order: the login line, then the events.
    var issued = 0
    var acknowledged: [Int] = []
    var kills = 0
    func runCycle(killAfter: TimeInterval?) throws -> RunOutcome {
        let first = issued
        issued += options.events
        let lines = [login] + (first..<issued).map(line)
        try (lines.joined(separator: "\n") + "\n").write(toFile: eventsPath, atomically: true, encoding: .utf8)
        let outcome = try runOnce(options, events: eventsPath, queue: queue, endpoint: endpoint, killAfter: killAfter)
        acknowledged += (first..<issued).prefix(max(0, outcome.printedLines - 1))
        return outcome
    }
    for _ in 0..<options.cycles {
        let outcome = try runCycle(killAfter: 0.15 + Double(random.next() % 1350) / 1000)
        if outcome.killed { kills += 1 }
        FileHandle.standardError.write(
            Data(
                "soak: cycle: acknowledged \(acknowledged.count) of \(issued)\(outcome.killed ? " (killed)" : "")\n"
                    .utf8
            )
        )
    }
    // The last run: fresh events too, then it drains the queue and exits.
    let finalFirst = issued
    let final = try runCycle(killAfter: nil)

    let delivered = server.deliveredTitles
    let lost = acknowledged.filter { delivered["soak-\($0)"] == nil }
    let twice = delivered.values.filter { $0 > 1 }.count
    print("soak_cycles=\(options.cycles)")
    print("soak_kills=\(kills)")
    print("soak_acknowledged=\(acknowledged.count)")
    print("soak_delivered=\(delivered.count)")
    print("soak_lost=\(lost.count)")
    print("soak_delivered_twice=\(twice)")
    print("soak_final_exit=\(final.status)")
    if !lost.isEmpty {
        FileHandle.standardError.write(Data("soak: lost \(lost.prefix(20).map { "soak-\($0)" })\n".utf8))
    }
    // The final run acknowledges every one of its events.
    return lost.isEmpty && final.status == 0 && final.printedLines - 1 == issued - finalFirst
}

do {
    let options = try SoakOptions(Array(CommandLine.arguments.dropFirst()))
    exit(try await soak(options) ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("containerkit-soak: \(error)\n".utf8))
    exit(1)
}
