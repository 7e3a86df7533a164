import ContainerKit
import Foundation

// `make bench`: every figure is measured in this one process and reported as a ratio to a baseline
// measured in the same run. Run from the package root (the corpus is read from ../shared/research/corpus).

// `CONTAINERKIT_BENCH_ONLY=diff` runs the diff section alone (for profiling it).
if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"] == "diff" {
    await DiffBench.run()
    exit(0)
}

// `CONTAINERKIT_BENCH_ONLY=sessions` runs the figures of sessions in the queue's log alone.
if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"] == "sessions" {
    await SessionLogBench.run()
    exit(0)
}

// `CONTAINERKIT_BENCH_ONLY=queue` runs the Braze queue figures alone (durable enqueue, end to end).
if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"] == "queue" {
    await BrazeBench.run()
    exit(0)
}

// `CONTAINERKIT_BENCH_ONLY=locks` (`make count-locks`) counts the locks of a push and of a delivered batch.
if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"] == "locks" {
    await LockCountBench.run()
    exit(0)
}

let corpus = "../shared/research/corpus/v5-mobile"
let brazePath = "\(corpus)/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json"
let cargoPath = "\(corpus)/fifty-five__Cargo-android__GTM-NFJ2XRG.json"

guard FileManager.default.fileExists(atPath: brazePath), FileManager.default.fileExists(atPath: cargoPath) else {
    print("notice: corpus not found at \(corpus); the evaluation benchmark needs the Braze and Cargo containers")
    exit(0)
}

// `CONTAINERKIT_BENCH_ONLY=scaling` runs the thread-scaling figures of the session section alone (`same-session`
// `same_session_2_threads_vs_1` alone); `memory` the
// whole session section (with `CONTAINERKIT_BENCH_SCALING_ROUNDS=1`, mostly its memory figures); `session-memory`
// its memory figures alone.
if ["scaling", "same-session", "memory", "session-memory"].contains(
    ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"]
) {
    await SessionBench.run()
    exit(0)
}

// `CONTAINERKIT_BENCH_EVENTS=n` shortens the stream (for quicker profiles).
let eventCount = ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_EVENTS"].flatMap { Int($0) } ?? 32_000
let events = EventStream.make(count: eventCount)

// MARK: ContainerKit

final class Counter: @unchecked Sendable {
    var calls = 0
    var recorded: [(String, ValueMap)] = []
    var recording = false
}
let counter = Counter()
let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .none))
for path in [brazePath, cargoPath] { manager.add(try await ContainerLoader().load(path: path)) }
for classPath in ["com.appboy.googletagmanager.BrazeGtmTagProvider", "path.to.Braze", "com.fiftyfive.cargo.Tags"] {
    manager.register(
        tagHandler: ClosureTagHandler { call in
            counter.calls += 1
            if counter.recording { counter.recorded.append((call.name, call.arguments)) }
        },
        for: classPath
    )
}
let session = manager.makeDataLayer()
// `CONTAINERKIT_BENCH_ONLY=dedup` measures `dedup_overhead` alone (for a profiler).
if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"] == "dedup" {
    print("dedup_overhead=\(Harness.ratio(DedupBench.run(manager: manager, events: events)))")
    exit(0)
}
@MainActor func runContainerKit() {
    for event in events { session.push(event: event.name, parameters: event.parameters) }
}

// MARK: Ideal

var idealRecorded: [(String, ValueMap)] = []
var idealRecording = false
var idealCalls = 0
var ideal = IdealImplementation { classPath, arguments in
    idealCalls += 1
    if idealRecording { idealRecorded.append((classPath, arguments)) }
}
@MainActor func runIdeal() {
    for event in events { ideal.process(event.name, event.parameters) }
}

// MARK: Naive

@MainActor func anyValue(_ value: Value) -> Any {
    switch value {
    case .string(let s): return s
    case .int(let i): return Int(i)
    case .double(let d): return d
    case .bool(let b): return b
    default: return NSNull()
    }
}
let naiveEventCount = 4_000
let naiveEvents: [[String: Any]] = events.prefix(naiveEventCount).map { event in
    var map: [String: Any] = ["event": event.name]
    for (key, value) in event.parameters { map[key] = anyValue(value) }
    return map
}
var naiveCalls = 0
let naive = try [brazePath, cargoPath].map { path in
    try NaiveImplementation(path: path) { _, arguments in naiveCalls += arguments.count >= 0 ? 1 : 0 }
}
@MainActor func runNaive() {
    for event in naiveEvents { for implementation in naive { implementation.process(event) } }
}

// MARK: Same decisions?

counter.recording = true
idealRecording = true
runContainerKit()
runIdeal()
counter.recording = false
idealRecording = false
let same =
    counter.recorded.count == idealRecorded.count
    && zip(counter.recorded, idealRecorded).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
print("handler_calls_per_pass=\(counter.recorded.count) ideal=\(idealRecorded.count) decisions_match=\(same)")
if !same {
    for (a, b) in zip(counter.recorded, idealRecorded) where a.0 != b.0 || a.1 != b.1 {
        print("first difference: containerkit \(a.0) \(a.1) vs ideal \(b.0) \(b.1)")
        break
    }
}

// `CONTAINERKIT_BENCH_PROFILE=passes` (30 when not a number) runs ContainerKit alone, for a profiler;
// with `CONTAINERKIT_BENCH_PROFILE_TARGET=ideal` it runs the ideal instead (to count its instructions).
if let passes = ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_PROFILE"] {
    let idealTarget = ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_PROFILE_TARGET"] == "ideal"
    for _ in 0..<(Int(passes) ?? 30) { if idealTarget { runIdeal() } else { runContainerKit() } }
    exit(0)
}

// MARK: Measure (interleaved rounds: each round measures the three variants back to back, so the ratio of
// a round compares runs made under the same machine conditions; the reported ratio is the median of rounds)

var ckRates: [Double] = []
var idealRates: [Double] = []
var naiveRates: [Double] = []
var idealRatios: [Double] = []
var naiveRatios: [Double] = []
for _ in 0..<9 {
    let ck = Harness.rate(samples: 3, count: eventCount, runContainerKit)
    let idealRate = Harness.rate(samples: 3, count: eventCount, runIdeal)
    let naiveRate = Harness.rate(samples: 3, count: naiveEventCount, runNaive)
    ckRates.append(ck)
    idealRates.append(idealRate)
    naiveRates.append(naiveRate)
    idealRatios.append(ck / idealRate)
    naiveRatios.append(ck / naiveRate)
}
@MainActor func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
let ck = median(ckRates)
let idealRate = median(idealRates)
let naiveRate = median(naiveRates)
benchmarkSink = counter.calls + idealCalls + naiveCalls

print("events_per_pass=\(eventCount)")
print("containerkit_events_per_s=\(Harness.format(ck))")
print("ideal_events_per_s=\(Harness.format(idealRate))")
print("naive_events_per_s=\(Harness.format(naiveRate))")
print("dedup_overhead=\(Harness.ratio(DedupBench.run(manager: manager, events: events)))")
// `CONTAINERKIT_BENCH_ONLY=eval` runs the evaluation section alone (to compare builds quickly).
if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"] != "eval" { await BenchExtensions.runAll() }
print("containerkit_vs_ideal=\(Harness.ratio(median(idealRatios)))")
print("containerkit_vs_naive=\(Harness.ratio(median(naiveRatios)))")
