import ContainerKit
import Foundation

/// Service figures (issue 8): how pushes scale over threads, what waiting for a busy session costs, how
/// much memory a live session takes, and how fast sessions snapshot and restore. Every figure is a ratio
/// to a baseline measured in this run, or a count.
enum SessionBench {
    static func run() async {
        guard let manager = await makeManager(), let unshared = await makeManager() else { return }
        let stream = EventStream.make(count: 20_000)

        // Threads on distinct sessions, and on one session, against one thread: each ratio the median of
        // rounds measured back to back. Each round also measures two controls the same way:
        // - the hand-written ideal (`IdealImplementation`), which makes the same decisions and builds the same
        //   argument maps with no runtime: code of the same kind (branches, loads, allocations) that shares
        //   nothing between its threads;
        // - a register-only loop, the machine's scaling for work that hardly uses a core;
        // - two threads pushing into sessions of two runtimes, each with its own copy of the containers and
        //   handlers: `two_threads_one_runtime_vs_two`, the two-thread rate of one runtime over it, is what
        //   sharing one runtime costs (1.0 when a push writes nothing another runtime's session reads).
        // This VM's vCPUs switch, every second or so, between a fast state and one where code that fills a
        // core runs at about 0.6 of the speed (most likely a neighbour on the physical core;
        // `CONTAINERKIT_BENCH_ROUNDS=1` prints the rounds). A round whose one-thread sample is fast and whose
        // two-thread sample is slow reads 1.2, the reverse 3.0; the register loop, which leaves the core's
        // units free, scales 2.0 either way. The pushes' ratio to the ideal's, round by round, is what the
        // runtime loses on its own. A sample is about 0.2 s (samples of 50 ms, tried, caught one-thread and
        // two-thread samples in different states more often); odd rounds reverse the order, so a drift favours
        // neither side. The one-session rounds come after (their hand-overs between threads make them slow)
        // with a one-thread sample of their own.
        _ = rate(threads: 2, stream) { _ in manager.makeDataLayer() }  // warm-up
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["CONTAINERKIT_BENCH_SCALING_ROUNDS"].flatMap { Int($0) } ?? scalingRounds
        var scaling: [Double] = []
        var ideal: [Double] = []
        var machine: [Double] = []
        var relative: [Double] = []
        var versusUnshared: [Double] = []
        for round in 0..<rounds {
            var samples: [() -> Double] = [
                { rate(threads: 1, stream, repeats: scalingRepeats) { _ in manager.makeDataLayer() } },
                { idealRate(threads: 1, stream) },
                { rate(threads: 2, stream, repeats: scalingRepeats) { _ in manager.makeDataLayer() } },
                { idealRate(threads: 2, stream) },
                {
                    rate(threads: 2, stream, repeats: scalingRepeats) { t in
                        t == 0 ? manager.makeDataLayer() : unshared.makeDataLayer()
                    }
                },
            ]
            if round % 2 == 1 { samples.reverse() }
            var measured = samples.map { $0() }
            if round % 2 == 1 { measured.reverse() }
            let (one, idealOne, two, idealTwo) = (measured[0], measured[1], measured[2], measured[3])
            versusUnshared.append(two / measured[4])
            let idealScaling = idealTwo / idealOne
            let control = spinRate(threads: 2) / spinRate(threads: 1)
            scaling.append(two / one)
            ideal.append(idealScaling)
            machine.append(control)
            relative.append(two / one / idealScaling)
            if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ROUNDS"] != nil {
                FileHandle.standardError.write(
                    Data(
                        "scaling round \(round): one \(Int(one))/s two \(Int(two))/s ratio \(two / one) ideal \(idealScaling) one runtime vs two \(two / measured[4]) machine \(control)\n"
                            .utf8
                    )
                )
            }
        }
        var sameSession: [Double] = []
        for _ in 0..<sameSessionRounds {
            let one = rate(threads: 1, stream, repeats: sameSessionRepeats) { _ in manager.makeDataLayer() }
            let shared = manager.makeDataLayer()
            let twoShared = rate(threads: 2, stream, repeats: sameSessionRepeats) { _ in shared }
            sameSession.append(twoShared / one)
        }
        print("two_thread_scaling=\(Harness.ratio(median(scaling)))")
        print("ideal_two_thread_scaling=\(Harness.ratio(median(ideal)))")
        print("two_thread_scaling_vs_ideal=\(Harness.ratio(median(relative)))")
        print("two_threads_one_runtime_vs_two=\(Harness.ratio(median(versusUnshared)))")
        print("machine_two_thread_scaling=\(Harness.ratio(median(machine)))")
        print("same_session_2_threads_vs_1=\(Harness.ratio(median(sameSession)))")
        if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ONLY"] == "scaling" { return }

        // Resident memory per live session after two typical events.
        let sessionCount = 100_000
        let typical: [(String, ValueMap)] = [
            ("screen_view", ["screenName": "home"]),
            ("logEvent", ["eventName": "played song", "intParam": 3, "stringParam": "jazz"]),
        ]
        var sessions: [DataLayer] = []
        sessions.reserveCapacity(sessionCount)
        let before = residentBytes()
        for i in 0..<sessionCount {
            let session = manager.makeDataLayer(sessionID: "user-\(i)")
            for (name, parameters) in typical { await session.push(event: name, parameters: parameters) }
            sessions.append(session)
        }
        let after = residentBytes()
        print("bytes_per_session=\((after - before) / sessionCount)")

        // Snapshot to JSON text and restore, per second.
        let sample = Array(sessions.prefix(20_000))
        sessions.removeAll()
        let snapshotRate = Harness.rate(samples: 3, count: sample.count) {
            var restored = 0
            for session in sample {
                let text = session.snapshot().jsonText
                if let snapshot = try? SessionSnapshot(jsonText: text) {
                    restored += manager.restoreDataLayer(from: snapshot).sessionID.isEmpty ? 0 : 1
                }
            }
            benchmarkSink = restored
        }
        print("snapshot_restore_per_s=\(Harness.format(snapshotRate))")
    }

    /// A runtime with the Braze and Cargo containers, each loaded anew, and a handler that does nothing.
    static func makeManager() async -> TagManager? {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .none))
        for path in [brazePath, cargoPath] {
            guard let container = try? await ContainerLoader().load(path: path) else { return nil }
            manager.add(container)
        }
        for classPath in [
            "com.appboy.googletagmanager.BrazeGtmTagProvider", "path.to.Braze", "com.fiftyfive.cargo.Tags",
        ] {
            // The handler touches nothing shared: it used to count calls in one atomic, an add on one cache
            // line from both threads per handler call, itself part of what kept `two_thread_scaling` under 2.
            manager.register(tagHandler: ClosureTagHandler { _ in }, for: classPath)
        }
        return manager
    }

    /// Rounds of `two_thread_scaling` (the figure is their median).
    static let scalingRounds = 15
    /// Passes over the 20,000-event stream per thread and sample of `two_thread_scaling` (about 0.2 s).
    static let scalingRepeats = 8
    /// Rounds and passes of `same_session_2_threads_vs_1` (slower: the threads hand the session over).
    static let sameSessionRounds = 5
    static let sameSessionRepeats = 2

    /// Events per second when `threads` threads each push the whole stream `repeats` times into
    /// `session(thread)`.
    ///
    /// Each thread pushes its own copy of the stream (its own strings and maps), as the users of a service
    /// send their own events: pushing the very same `ValueMap`s from both threads made every retain of a
    /// pushed map an atomic write to a cache line both cores share, which no service does.
    static func rate(
        threads: Int,
        _ stream: [(name: String, parameters: ValueMap)],
        repeats: Int = 1,
        _ session: (Int) -> DataLayer
    ) -> Double {
        let layers = (0..<threads).map(session)
        let streams = ownCopies(of: stream, count: threads)
        let elapsed = timeOnThreads(
            (0..<threads).map { t in
                let layer = layers[t]
                let own = streams[t]
                return {
                    for _ in 0..<repeats {
                        for event in own { layer.push(event: event.name, parameters: event.parameters) }
                    }
                }
            }
        )
        return Double(threads * repeats * stream.count) / max(elapsed, 1e-9)
    }

    /// Passes over the stream per thread and sample of the ideal (about as long as a sample of the pushes:
    /// the ideal is two to three times faster).
    static let idealRepeats = 20

    /// Events per second of the hand-written ideal (`IdealImplementation`) on `threads` threads at once, each
    /// over its own copy of the stream with its own handler.
    static func idealRate(threads: Int, _ stream: [(name: String, parameters: ValueMap)]) -> Double {
        let streams = ownCopies(of: stream, count: threads)
        let calls = UnsafeMutableBufferPointer<Int>.allocate(capacity: threads * 8)
        defer { calls.deallocate() }
        let address = UInt(bitPattern: calls.baseAddress)  // a pointer is not Sendable; its address is
        let elapsed = timeOnThreads(
            (0..<threads).map { t in
                let own = streams[t]
                return {
                    var count = 0
                    var implementation = IdealImplementation { _, _ in count += 1 }
                    for _ in 0..<idealRepeats {
                        for event in own { implementation.process(event.name, event.parameters) }
                    }
                    UnsafeMutablePointer<Int>(bitPattern: address)![t * 8] = count  // a cache line apart
                }
            }
        )
        for t in 0..<threads { benchmarkSink &+= calls[t * 8] }
        return Double(threads * idealRepeats * stream.count) / max(elapsed, 1e-9)
    }

    /// Iterations per second of a loop that keeps its state in registers (no memory shared or written; a
    /// sample takes about 50 ms here) on `threads` threads at once: what the machine gives a second thread
    /// for work that leaves the core's execution units free.
    static func spinRate(threads: Int, iterations: Int = 25_000_000) -> Double {
        let results = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: threads * 8)
        defer { results.deallocate() }
        let address = UInt(bitPattern: results.baseAddress)  // a pointer is not Sendable; its address is
        let elapsed = timeOnThreads(
            (0..<threads).map { t in
                {
                    var x = UInt64(t + 1)
                    for _ in 0..<iterations { x ^= x &<< 13; x ^= x &>> 7; x ^= x &<< 17 }  // xorshift: no shortcut
                    UnsafeMutablePointer<UInt64>(bitPattern: address)![t * 8] = x  // a cache line apart
                }
            }
        )
        for t in 0..<threads { benchmarkSink &+= Int(truncatingIfNeeded: results[t * 8]) }
        return Double(threads * iterations) / max(elapsed, 1e-9)
    }

    /// Runs each job on a thread of its own, all released at once, and returns the seconds until the last one
    /// finished.
    static func timeOnThreads(_ jobs: [@Sendable () -> Void]) -> Double {
        let done = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for job in jobs {
            done.enter()
            Thread {
                start.wait()
                job()
                done.leave()
            }.start()
        }
        let begin = DispatchTime.now().uptimeNanoseconds
        for _ in jobs { start.signal() }
        done.wait()
        return Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9
    }

    static func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }

    /// `count` copies of `stream`, each with strings and maps of its own (one per pushing thread).
    static func ownCopies(
        of stream: [(name: String, parameters: ValueMap)],
        count: Int
    ) -> [[(name: String, parameters: ValueMap)]] {
        (0..<count).map { _ in stream.map { (name: ownCopy($0.name), parameters: ownCopy($0.parameters)) } }
    }

    /// A copy of `string` in storage of its own (a string of more than 15 bytes lives in a shared buffer).
    static func ownCopy(_ string: String) -> String { String(decoding: Array(string.utf8), as: UTF8.self) }

    /// A copy of `map` with arrays and strings of its own.
    static func ownCopy(_ map: ValueMap) -> ValueMap {
        var copy = ValueMap(minimumCapacity: map.count)
        for (key, value) in map { copy[ownCopy(key)] = ownCopy(value) }
        return copy
    }

    static func ownCopy(_ value: Value) -> Value {
        switch value {
        case .string(let s): return .string(ownCopy(s))
        case .array(let a): return .array(a.map(ownCopy))
        case .object(let m): return .object(ownCopy(m))
        default: return value
        }
    }

    /// The process's resident set size, from /proc/self/statm (0 where that file does not exist).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
