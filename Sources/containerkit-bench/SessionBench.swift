import ContainerKit
import Foundation

/// Service figures (issue 8): how pushes scale over threads, what waiting for a busy session costs, how
/// much memory a live session takes, and how fast sessions snapshot and restore. Every figure is a ratio
/// to a baseline measured in this run, or a count.
enum SessionBench {
    static func run() async {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .none))
        for path in [brazePath, cargoPath] {
            guard let container = try? await ContainerLoader().load(path: path) else { return }
            manager.add(container)
        }
        for classPath in [
            "com.appboy.googletagmanager.BrazeGtmTagProvider", "path.to.Braze", "com.fiftyfive.cargo.Tags",
        ] {
            // The handler touches nothing shared: it used to count calls in one atomic, an add on one cache
            // line from both threads per handler call, itself part of what kept `two_thread_scaling` under 2.
            manager.register(tagHandler: ClosureTagHandler { _ in }, for: classPath)
        }
        let stream = EventStream.make(count: 20_000)

        // Threads on distinct sessions, and on one session, against one thread: each ratio the median of
        // rounds measured back to back, each sample `scalingRepeats` passes over the stream per thread (a few
        // hundred milliseconds: one 20,000-event pass, 15-30 ms, was shorter than the scheduling hiccups of a
        // shared VM, and single samples swung the ratio from 1.2 to 1.9). Odd rounds measure two threads
        // first, so a drift of the machine's speed favours neither side; the one-session rounds come after
        // (their hand-overs between threads make them slow) with a one-thread sample of their own.
        _ = rate(threads: 2, stream) { _ in manager.makeDataLayer() }  // warm-up
        var scaling: [Double] = []
        var machine: [Double] = []
        var relative: [Double] = []
        for round in 0..<scalingRounds {
            var one = 0.0
            var two = 0.0
            if round % 2 == 0 {
                one = rate(threads: 1, stream, repeats: scalingRepeats) { _ in manager.makeDataLayer() }
                two = rate(threads: 2, stream, repeats: scalingRepeats) { _ in manager.makeDataLayer() }
            } else {
                two = rate(threads: 2, stream, repeats: scalingRepeats) { _ in manager.makeDataLayer() }
                one = rate(threads: 1, stream, repeats: scalingRepeats) { _ in manager.makeDataLayer() }
            }
            scaling.append(two / one)
            // The machine's own two-thread scaling beside it: register-only work that shares nothing. On this
            // kind of shared VM it drops below 2 while a neighbour holds the host's cores, and the runtime's
            // figure drops with it; their ratio is what the runtime loses on its own.
            let control = spinRate(threads: 2) / spinRate(threads: 1)
            machine.append(control)
            relative.append(two / one / control)
            if ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_ROUNDS"] != nil {
                FileHandle.standardError.write(
                    Data(
                        "scaling round \(round): one \(Int(one))/s two \(Int(two))/s ratio \(two / one) machine \(control)\n"
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
        print("machine_two_thread_scaling=\(Harness.ratio(median(machine)))")
        print("two_thread_scaling_vs_machine=\(Harness.ratio(median(relative)))")
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

    /// Rounds of `two_thread_scaling` (the figure is their median).
    static let scalingRounds = 15
    /// Passes over the 20,000-event stream per thread and sample of `two_thread_scaling`.
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
        let streams = (0..<threads).map { _ in
            stream.map { (name: ownCopy($0.name), parameters: ownCopy($0.parameters)) }
        }
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

    /// Iterations per second of a loop that keeps its state in registers (no memory shared or written; a
    /// sample takes about 0.2 s here, as long as one of the pushes) on `threads` threads at once: what the
    /// machine itself gives a second thread.
    static func spinRate(threads: Int, iterations: Int = 100_000_000) -> Double {
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
